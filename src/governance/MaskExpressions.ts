import { createHmac } from "node:crypto"
import type { DbType } from "../domain/Connection"
import type { PiiAction } from "../domain/Pii"
import { quoteIdentifier } from "./Catalog"

/**
 * Each PII action as SQL the database computes, per dialect, so a statement only ever sees the
 * masked value: `redact` a constant (the text [REDACTED], or NULL of the column's own type for
 * other types), `mask` a fixed fill and the last four characters (never the length), `hash`
 * HMAC-SHA256 of the value's text, in hex, under the organization's key, and `drop` NULL. The
 * same value hashes alike on every engine that can compute HMAC-SHA256 over UTF-8, and alike to
 * the gateway's own HMAC of it.
 */
export const REDACTED = "[REDACTED]"
export const MASK_FILL = "****"
/** A masked value shows its last four characters only when it has this many: a shorter one would show too much of itself. */
export const MASK_SHOWS_FROM = 8

/** The gateway's own mask of a value's text, as the database computes it. */
export const maskText = (text: string) => {
  const characters = [...text]
  return characters.length >= MASK_SHOWS_FROM ? MASK_FILL + characters.slice(-4).join("") : MASK_FILL
}

/** The HMAC key as the inner and outer pads HMAC-SHA256 hashes, in hex (for keys of up to 64 bytes). */
export interface HashPads {
  readonly key: string
  readonly inner: string
  readonly outer: string
}

export const hashPadsOf = (key: Buffer): HashPads => {
  const block = Buffer.alloc(64)
  key.copy(block)
  const xor = (byte: number) => Buffer.from(block.map((b) => b ^ byte)).toString("hex")
  return { key: key.toString("hex"), inner: xor(0x36), outer: xor(0x5c) }
}

/**
 * Pads of a key of zeros, for a statement only planned (EXPLAIN, an estimate): a plan can show its
 * expressions' constants in forms no scrubbing can be sure to catch (DuckDB prints a folded BLOB
 * byte by byte), and its shape does not depend on the key.
 */
export const PLAN_PADS = hashPadsOf(Buffer.alloc(32))

/** The gateway's own HMAC of a value, as the database computes it. */
export const hmacHex = (key: Buffer, text: string) => createHmac("sha256", key).update(text).digest("hex")

// Types whose values are text: a redacted one reads [REDACTED]; any other type reads NULL, so arithmetic, JSON and date functions still apply.
const TEXTUAL = /^\s*(text|citext|name|bpchar|char|character|varchar|character varying|nchar|nvarchar|national|ntext|string|clob|tinytext|mediumtext|longtext|enum|set)\b/i

interface Dialect {
  readonly text: (column: string) => string
  /** The last four characters of a text. */
  readonly last4: (text: string) => string
  /** Its length in characters. */
  readonly length: (text: string) => string
  readonly hash: (text: string, pads: HashPads) => string
}

const DIALECTS: Record<DbType, Dialect> = {
  postgresql: {
    text: (c) => `${c}::text`,
    last4: (t) => `right(${t}, 4)`,
    length: (t) => `char_length(${t})`,
    hash: (t, p) => `encode(sha256(decode('${p.outer}', 'hex') || sha256(decode('${p.inner}', 'hex') || convert_to(${t}, 'UTF8'))), 'hex')`
  },
  // Redshift has no binary concatenation to build HMAC from: a keyed SHA-256 instead (its own values, not the other engines').
  redshift: {
    text: (c) => `${c}::varchar`,
    last4: (t) => `right(${t}, 4)`,
    length: (t) => `char_length(${t})`,
    hash: (t, p) => `sha2('${p.key}' || ${t}, 256)`
  },
  mysql: {
    text: (c) => `convert(${c} using utf8mb4)`,
    last4: (t) => `right(${t}, 4)`,
    length: (t) => `char_length(${t})`,
    hash: (t, p) => `sha2(concat(unhex('${p.outer}'), unhex(sha2(concat(unhex('${p.inner}'), ${t}), 256))), 256)`
  },
  // SQLite has no SHA-256 of its own: the connector registers this deterministic function on each database it opens.
  sqlite: {
    text: (c) => `cast(${c} as text)`,
    last4: (t) => `substr(${t}, -4)`,
    length: (t) => `length(${t})`,
    hash: (t, p) => `sluice_hmac_sha256('${p.key}', ${t})`
  },
  duckdb: {
    text: (c) => `cast(${c} as varchar)`,
    last4: (t) => `right(${t}, 4)`,
    length: (t) => `length(${t})`,
    hash: (t, p) => `sha256(unhex('${p.outer}') || unhex(sha256(unhex('${p.inner}') || encode(${t}))))`
  },
  mssql: {
    text: (c) => `cast(${c} as nvarchar(max))`,
    last4: (t) => `right(${t}, 4)`,
    length: (t) => `len(${t} + 'x') - 1`,
    hash: (t, p) => `lower(convert(varchar(64), hashbytes('SHA2_256', 0x${p.outer} + hashbytes('SHA2_256', 0x${p.inner} + cast(cast(${t} as varchar(max)) as varbinary(max)))), 2))`
  },
  snowflake: {
    text: (c) => `cast(${c} as varchar)`,
    last4: (t) => `right(${t}, 4)`,
    length: (t) => `length(${t})`,
    hash: (t, p) =>
      `lower(to_varchar(sha2_binary(to_binary('${p.outer}', 'HEX') || sha2_binary(to_binary('${p.inner}', 'HEX') || to_binary(${t}, 'UTF-8'), 256), 256), 'HEX'))`
  },
  bigquery: {
    text: (c) => `cast(${c} as string)`,
    last4: (t) => `right(${t}, 4)`,
    length: (t) => `char_length(${t})`,
    hash: (t, p) => `to_hex(sha256(concat(from_hex('${p.outer}'), sha256(concat(from_hex('${p.inner}'), cast(${t} as bytes))))))`
  },
  clickhouse: {
    text: (c) => `toString(${c})`,
    last4: (t) => `rightUTF8(${t}, 4)`,
    length: (t) => `lengthUTF8(${t})`,
    hash: (t, p) => `lower(hex(SHA256(concat(unhex('${p.outer}'), SHA256(concat(unhex('${p.inner}'), ${t}))))))`
  },
  databricks: {
    text: (c) => `cast(${c} as string)`,
    last4: (t) => `right(${t}, 4)`,
    length: (t) => `char_length(${t})`,
    hash: (t, p) => `sha2(concat(unhex('${p.outer}'), unhex(sha2(concat(unhex('${p.inner}'), encode(${t}, 'UTF-8')), 256))), 256)`
  },
  trino: {
    text: (c) => `cast(${c} as varchar)`,
    last4: (t) => `substr(${t}, -4)`,
    length: (t) => `length(${t})`,
    hash: (t, p) => `lower(to_hex(hmac_sha256(to_utf8(${t}), from_hex('${p.key}'))))`
  }
}

const concat = (dbType: DbType, a: string, b: string) =>
  dbType === "mssql" ? `${a} + ${b}` : dbType === "postgresql" || dbType === "redshift" || dbType === "sqlite" || dbType === "duckdb" || dbType === "snowflake" || dbType === "trino" ? `${a} || ${b}` : `concat(${a}, ${b})`

/** One column of a projection that masks at the source: the column itself, or its masked value under its own name. */
export const maskedColumn = (dbType: DbType, column: { readonly name: string; readonly type: string; readonly action: PiiAction | undefined }, pads: HashPads) => {
  const name = quoteIdentifier(dbType, column.name)
  return column.action === undefined ? name : `${maskExpression(dbType, { ...column, action: column.action }, pads)} as ${name}`
}

/** The value a PII action leaves of a column, as an expression (`maskedColumn` without its alias; a masked copy's UPDATE sets it). */
export const maskExpression = (dbType: DbType, column: { readonly name: string; readonly type: string; readonly action: PiiAction }, pads: HashPads) => {
  const name = quoteIdentifier(dbType, column.name)
  const dialect = DIALECTS[dbType]
  switch (column.action) {
    case "redact":
      return dbType === "sqlite" || TEXTUAL.test(column.type) ? `'${REDACTED}'` : `case when 1 = 0 then ${name} end`
    case "drop":
      return `case when 1 = 0 then ${name} end`
    case "mask": {
      const text = dialect.text(name)
      const fill = `'${MASK_FILL}'`
      // NULL stays NULL: whether there is a value is kept, as the characters shown are.
      return `case when ${dialect.length(text)} >= ${MASK_SHOWS_FROM} then ${concat(dbType, fill, dialect.last4(text))} when ${name} is not null then ${fill} end`
    }
    case "hash":
      return dialect.hash(dialect.text(name), pads)
  }
}

/**
 * A database's message about a rewritten statement with the hash key taken out: a message may
 * quote the statement (MySQL's "near '…'") or a plan its expressions, and may cut a quote short,
 * so every run of hex digits that shares eight of them with the key's forms goes, whole. DuckDB's
 * excerpt of the statement (LINE n: …) goes too: it shows the rewrite, not what the caller wrote.
 */
export const withoutKey = (pads: HashPads) => {
  const windows = new Set<string>()
  for (const secret of [pads.key, pads.inner, pads.outer]) for (let i = 0; i + 8 <= secret.length; i++) windows.add(secret.slice(i, i + 8))
  return (text: string) =>
    text.replace(/\n+LINE \d+:[\s\S]*$/, "").replace(/[0-9a-fA-F]{8,}/g, (run) => {
      const lower = run.toLowerCase()
      for (let i = 0; i + 8 <= lower.length; i++) if (windows.has(lower.slice(i, i + 8))) return "…"
      return run
    })
}
