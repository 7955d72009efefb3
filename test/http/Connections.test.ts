import * as path from "node:path"
import { DuckDBInstance } from "@duckdb/node-api"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, mysqlAvailable, postgresAvailable, TEST_MYSQL_URL, type TestDatabase } from "../support/Servers"

const servers = { postgres: await postgresAvailable(), mysql: await mysqlAvailable() }
const skip = !servers.postgres || !servers.mysql
const mysqlUrl = new URL(TEST_MYSQL_URL)

describe("connections over HTTP on the embedded store", () => {
  let gateway: Gateway
  let admin: string
  let reader: string
  let database: TestDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table orders (id int primary key, total numeric)")
    gateway = await startApp({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000" } })
    admin = await localKey(gateway)
    const created = await request(gateway.url, "/api/keys", { key: admin, body: { name: "reader", scopes: ["read"] } })
    reader = created.json.key
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: admin, ...options })
  const pgConnection = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    db_type: "postgresql",
    host: "127.0.0.1",
    port: 5432,
    database: database.name,
    username: "root",
    ...extra
  })
  const sessions = async () =>
    (await database.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where datname = $1 and application_name = 'sluice'", [database.name]))[0]!.n

  it.skipIf(skip)("creates, reads, edits, clones and deletes a connection; secrets are write-only", async () => {
    const created = await api("/api/connections", {
      body: pgConnection("warehouse", { password: "pw-create-1", description: "main", tags: ["prod"] })
    })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ name: "warehouse", db_type: "postgresql", password_set: true, read_only: false, tags: ["prod"] })
    expect(created.json).not.toHaveProperty("password")

    const read = await api("/api/connections/warehouse")
    expect(read.json).toEqual(created.json)
    const listed = await request(gateway.url, "/api/connections", { key: reader })
    expect(listed.json.items.map((c: { name: string }) => c.name)).toContain("warehouse")

    // An edit without the password keeps it; the description changes.
    const edited = await api("/api/connections/warehouse", { method: "PUT", body: pgConnection("warehouse", { description: "edited" }) })
    expect(edited.status).toBe(200)
    expect(edited.json).toMatchObject({ description: "edited", password_set: true })

    const cloned = await api("/api/connections/warehouse/clone", { body: { name: "warehouse_copy" } })
    expect(cloned.status).toBe(201)
    expect(cloned.json).toMatchObject({ name: "warehouse_copy", description: "edited", password_set: true })
    expect((await api("/api/connections/warehouse_copy/test", { method: "POST" })).json.ok).toBe(true)

    expect((await api("/api/connections/warehouse_copy", { method: "DELETE" })).status).toBe(204)
    expect((await api("/api/connections/warehouse_copy")).status).toBe(404)
    expect((await api("/api/connections/warehouse_copy", { method: "DELETE" })).status).toBe(404)
  })

  it.skipIf(skip)("refuses bad input with the field named, and stores nothing", async () => {
    const cases: Array<[unknown, number, RegExp]> = [
      [{ name: "x", db_type: "oracle" }, 400, /db_type/],
      [{ name: "x", db_type: "postgresql", database: "d", username: "u" }, 400, /host: is missing/],
      [pgConnection("x", { account: "acme" }), 400, /account: is unexpected/],
      [pgConnection("no spaces"), 400, /name: must be 1 to 64/],
      [pgConnection("x", { port: 70000 }), 400, /port: must be an integer between 1 and 65535/],
      [pgConnection("x", { tls: { mode: "sometimes" } }), 400, /tls\.mode/],
      [pgConnection("x", { ssh_tunnel: { host: "bastion", username: "u", key: "k" } }), 400, /ssh_tunnel\.key: is unexpected/],
      [{ name: "x", db_type: "sqlite", database: "/etc/passwd" }, 400, /data directory/],
      [{ name: "x", db_type: "duckdb", database: "../outside.duckdb" }, 400, /data directory/],
      [{ name: "x", db_type: "clickhouse", host: "h", protocol: "carrier-pigeon" }, 400, /protocol/]
    ]
    for (const [body, status, message] of cases) {
      const response = await api("/api/connections", { body })
      expect(response.status, JSON.stringify(body)).toBe(status)
      expect(response.json.code).toBe("invalid_request")
      expect(response.json.message).toMatch(message)
    }
    expect((await api("/api/connections/x")).status).toBe(404)

    expect((await api("/api/connections", { body: pgConnection("dup") })).status).toBe(201)
    const duplicate = await api("/api/connections", { body: pgConnection("dup") })
    expect(duplicate.status).toBe(409)
    expect(duplicate.json.code).toBe("conflict")

    const byReader = await request(gateway.url, "/api/connections", { key: reader, body: pgConnection("by_reader") })
    expect(byReader.status).toBe(403)
    expect(byReader.json.required_scope).toBe("write")
  })

  it.skipIf(skip)("test and diagnose name the failing step; a broken connection leaves the others working", async () => {
    await api("/api/connections", { body: pgConnection("pg_ok") })
    await api("/api/connections", { body: pgConnection("pg_closed_port", { port: 1 }) })
    await api("/api/connections", { body: pgConnection("pg_no_user", { username: "nobody_here", password: "pw-wrong-2" }) })
    await api("/api/connections", { body: pgConnection("pg_no_dns", { host: "no-such-host.invalid" }) })
    const my = { db_type: "mysql", host: mysqlUrl.hostname, port: Number(mysqlUrl.port || 3306), username: "root" }
    await api("/api/connections", { body: { name: "maria_ok", ...my, database: mysqlUrl.pathname.slice(1) } })
    await api("/api/connections", { body: { name: "maria_bad_pw", ...my, password: "pw-wrong-3" } })

    const results = Object.fromEntries(
      await Promise.all(
        ["pg_ok", "pg_closed_port", "pg_no_user", "pg_no_dns", "maria_ok", "maria_bad_pw"].map(async (name) => {
          const r = await api(`/api/connections/${name}/test`, { method: "POST" })
          expect(r.status).toBe(200)
          return [name, r.json] as const
        })
      )
    )
    expect(results["pg_ok"]).toMatchObject({ ok: true })
    expect(results["maria_ok"]).toMatchObject({ ok: true })
    expect(results["pg_closed_port"]).toMatchObject({ ok: false, step: "tcp" })
    expect(results["pg_no_user"]).toMatchObject({ ok: false, step: "auth" })
    expect(results["pg_no_dns"]).toMatchObject({ ok: false, step: "dns" })
    expect(results["maria_bad_pw"]).toMatchObject({ ok: false, step: "auth" })
    for (const r of Object.values(results)) expect(r.latency_ms).toBeGreaterThan(0)

    const diagnosed = await api("/api/connections/pg_ok/diagnose", { method: "POST" })
    expect(diagnosed.json.ok).toBe(true)
    expect(diagnosed.json.steps.map((s: { step: string; status: string }) => `${s.step}:${s.status}`)).toEqual([
      "dns:ok",
      "tcp:ok",
      "tls:skipped",
      "auth:ok",
      "privileges:ok"
    ])
    expect(diagnosed.json.steps.at(-1).detail).toMatch(/^1 readable table/)
    const refused = await api("/api/connections/pg_closed_port/diagnose", { method: "POST" })
    expect(refused.json.ok).toBe(false)
    expect(refused.json.steps.at(-1)).toMatchObject({ step: "tcp", status: "failed" })
    const noUser = await api("/api/connections/pg_no_user/diagnose", { method: "POST" })
    expect(noUser.json.steps.at(-1)).toMatchObject({ step: "auth", status: "failed" })
    const mariaDiagnosed = await api("/api/connections/maria_ok/diagnose", { method: "POST" })
    expect(mariaDiagnosed.json.steps.map((s: { status: string }) => s.status)).not.toContain("failed")

    const credentials = await api("/api/connections/test-credentials", { body: pgConnection("unsaved", { username: "nobody_here" }) })
    expect(credentials.json).toMatchObject({ ok: false, step: "auth" })
    expect((await api("/api/connections/unsaved")).status).toBe(404)
    expect((await api("/api/connections/pg_ok/test", { method: "POST" })).json.ok).toBe(true)
  })

  it.skipIf(skip)("reads SQLite and DuckDB files in the data directory", async () => {
    const sqliteFile = path.join(gateway.dataDir, "shop.sqlite")
    const db = new Database(sqliteFile)
    db.exec("create table items (id integer primary key, name text)")
    db.close()
    const duckFile = path.join(gateway.dataDir, "shop.duckdb")
    const duck = await DuckDBInstance.create(duckFile)
    const connection = await duck.connect()
    await connection.run("create table items (id integer, name varchar)")
    connection.closeSync()
    duck.closeSync()

    for (const [name, dbType, database] of [
      ["lite", "sqlite", "shop.sqlite"],
      ["duck", "duckdb", duckFile]
    ] as const) {
      expect((await api("/api/connections", { body: { name, db_type: dbType, database } })).status).toBe(201)
      expect((await api(`/api/connections/${name}/test`, { method: "POST" })).json).toMatchObject({ ok: true })
      const diagnosed = await api(`/api/connections/${name}/diagnose`, { method: "POST" })
      expect(diagnosed.json.steps.map((s: { step: string; status: string }) => `${s.step}:${s.status}`)).toEqual([
        "file:ok",
        "tls:skipped",
        "auth:ok",
        "privileges:ok"
      ])
    }
    await api("/api/connections", { body: { name: "ghost", db_type: "sqlite", database: "missing.sqlite" } })
    expect((await api("/api/connections/ghost/test", { method: "POST" })).json).toMatchObject({ ok: false, step: "auth" })
    const ghost = await api("/api/connections/ghost/diagnose", { method: "POST" })
    expect(ghost.json.steps).toEqual([expect.objectContaining({ step: "file", status: "failed" })])
  })

  it.skipIf(skip)("keeps one pool per connection, replaces it on edit and closes it on delete", async () => {
    await api("/api/connections", { body: pgConnection("pooled") })
    for (let i = 0; i < 3; i++) expect((await api("/api/connections/pooled/test", { method: "POST" })).json.ok).toBe(true)
    const pools = (await api("/api/pool/stats")).json.pools.filter((p: { name: string }) => p.name === "pooled")
    expect(pools).toEqual([expect.objectContaining({ name: "pooled", version: 1, total: 1, idle: 1 })])
    expect(await sessions()).toBeGreaterThanOrEqual(1)

    await api("/api/connections/pooled", { method: "PUT", body: pgConnection("pooled", { description: "v2" }) })
    expect((await api("/api/connections/pooled/test", { method: "POST" })).json.ok).toBe(true)
    const replaced = (await api("/api/pool/stats")).json.pools.filter((p: { name: string }) => p.name === "pooled")
    expect(replaced.map((p: { version: number }) => p.version)).toEqual([2])

    for (const name of ["pooled", "warehouse", "pg_ok", "dup", "pg_no_dns", "pg_no_user", "pg_closed_port"]) {
      await api(`/api/connections/${name}`, { method: "DELETE" })
    }
    expect((await api("/api/pool/stats")).json.pools.filter((p: { db_type: string }) => p.db_type === "postgresql")).toEqual([])
    const deadline = Date.now() + 5000
    while ((await sessions()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    expect(await sessions()).toBe(0)
  })

  it.skipIf(skip)("lists every db_type's capabilities, marking the ones this build cannot open", async () => {
    const all = await request(gateway.url, "/api/connectors/capabilities", { key: reader })
    expect(all.json.connectors).toHaveLength(11)
    const byType = Object.fromEntries(all.json.connectors.map((c: { db_type: string }) => [c.db_type, c]))
    expect(byType["postgresql"]).toMatchObject({ available: true, driver: "pg", server_side_cancel: true })
    expect(byType["sqlite"]).toMatchObject({ available: true, local_file: true })
    await api("/api/connections", { body: { name: "lite_caps", db_type: "sqlite", database: "shop.sqlite" } })
    expect((await api("/api/connections/lite_caps/capabilities")).json).toMatchObject({ db_type: "sqlite", driver: "better-sqlite3" })
    const unavailable = all.json.connectors.filter((c: { available: boolean }) => !c.available).map((c: { db_type: string }) => c.db_type)
    for (const dbType of unavailable) {
      const r = await api("/api/connections/test-credentials", {
        body: { name: "x", db_type: dbType, ...(dbType === "bigquery" ? { project: "p" } : dbType === "snowflake" ? { account: "a", username: "u" } : dbType === "databricks" ? { host: "h", http_path: "/p" } : { host: "h", username: "u" }) }
      })
      expect(r.json, dbType).toMatchObject({ ok: false, step: "config" })
    }
  })
})
