// One SQLite database, opened read-only in a child process: a statement inside SQLite's C code
// cannot be stopped from JavaScript, so a timeout ends the whole process instead.
import { createHmac } from "node:crypto"
import Database from "better-sqlite3"

let db = null

const plain = (value) =>
  typeof value === "bigint"
    ? value >= Number.MIN_SAFE_INTEGER && value <= Number.MAX_SAFE_INTEGER ? Number(value) : value.toString()
    : value instanceof Uint8Array ? Buffer.from(value).toString("base64") : value

// A lower bound of a row's size as JSON, as the gateway counts it (Connector.ts rowBytes).
const rowBytes = (row) => row.reduce((bytes, value) => bytes + (value === null ? 0 : typeof value === "string" ? value.length : String(value).length), 0)

const run = ({ id, sql, maxRows, maxBytes }) => {
  const statement = db.prepare(sql)
  if (!statement.reader) throw Object.assign(new Error("Only statements that return rows can run here"), { code: "SQLITE_READONLY" })
  statement.raw(true)
  const columns = statement.columns().map((c) => ({ name: c.name, type: (c.type ?? "").toLowerCase() }))
  const rows = []
  let bytes = 0
  for (const row of statement.iterate()) {
    if (rows.length > maxRows) break
    const values = row.map(plain)
    rows.push(values)
    bytes += rowBytes(values)
    // Stopping here ends the statement: iterate() resets it when the loop is left.
    if (maxBytes !== undefined && bytes > maxBytes) return { id, ok: true, columns, rows: [], truncated: false, oversized: true, bytes }
  }
  return { id, ok: true, columns, rows: rows.slice(0, maxRows), truncated: rows.length > maxRows, bytes }
}

process.on("message", (message) => {
  if (message.open !== undefined) {
    try {
      db = new Database(message.open, { readonly: true, fileMustExist: true, timeout: message.busyTimeoutMs })
      db.pragma("query_only = ON")
      db.defaultSafeIntegers(true)
      // SQLite has no SHA-256: masking at the source hashes PII with this (the gateway's HMAC, the key given in the statement).
      db.function("sluice_hmac_sha256", { deterministic: true }, (key, value) =>
        value === null || typeof key !== "string" ? null : createHmac("sha256", Buffer.from(key, "hex")).update(String(value)).digest("hex")
      )
      process.send({ ready: true })
    } catch (error) {
      process.send({ ready: false, message: String(error.message) })
    }
    return
  }
  try {
    process.send(run(message))
  } catch (error) {
    process.send({ id: message.id, ok: false, code: error.code ?? "", message: String(error.message) })
  }
})
process.on("disconnect", () => process.exit(0))
