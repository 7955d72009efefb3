import * as fs from "node:fs"
import * as path from "node:path"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey, startGateway, tempDataDir } from "../support/Gateway"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

const FORMS: Array<[url: string, fields: Record<string, unknown>, secrets: Array<string>]> = [
  [
    "postgresql://bob:s3cr%40t@db.example.com:5433/sales?sslmode=verify-full",
    { db_type: "postgresql", host: "db.example.com", port: 5433, username: "bob", database: "sales", tls: { mode: "verify-full" } },
    ["password"]
  ],
  ["postgres://bob@db/sales", { db_type: "postgresql", host: "db", username: "bob", database: "sales" }, []],
  ["mysql://root:pw@127.0.0.1:3306/shop?ssl-mode=REQUIRED", { db_type: "mysql", host: "127.0.0.1", port: 3306, username: "root", database: "shop", tls: { mode: "require" } }, ["password"]],
  ["mssql://sa:pw@sql.local:1433/erp", { db_type: "mssql", host: "sql.local", port: 1433, username: "sa", database: "erp" }, ["password"]],
  ["sqlserver://sa@sql.local/erp", { db_type: "mssql", host: "sql.local", username: "sa", database: "erp" }, []],
  ["redshift://admin:pw@c.eu-west-1.redshift.amazonaws.com:5439/dev", { db_type: "redshift", host: "c.eu-west-1.redshift.amazonaws.com", port: 5439, username: "admin", database: "dev" }, ["password"]],
  ["clickhouse://u:pw@ch:8123/default", { db_type: "clickhouse", host: "ch", port: 8123, username: "u", database: "default", protocol: "http" }, ["password"]],
  ["clickhouse+https://u@ch:8443/logs", { db_type: "clickhouse", host: "ch", port: 8443, username: "u", database: "logs", protocol: "http", tls: { mode: "require" } }, []],
  ["trino://ana@trino:8080/hive/web", { db_type: "trino", host: "trino", port: 8080, username: "ana", catalog: "hive", schema_name: "web" }, []],
  [
    "snowflake://ana:pw@acme-xy12/ANALYTICS/PUBLIC?warehouse=WH&role=ANALYST",
    { db_type: "snowflake", account: "acme-xy12", username: "ana", database: "ANALYTICS", schema_name: "PUBLIC", warehouse: "WH", role: "ANALYST" },
    ["password"]
  ],
  ["bigquery://my-project/sales?location=EU", { db_type: "bigquery", project: "my-project", dataset: "sales", location: "EU" }, []],
  [
    "databricks://token:dapi0123@adb-1.azuredatabricks.net/?http_path=/sql/1.0/warehouses/abc&catalog=main&schema=default",
    { db_type: "databricks", host: "adb-1.azuredatabricks.net", http_path: "/sql/1.0/warehouses/abc", catalog: "main", schema_name: "default" },
    ["access_token"]
  ],
  ["duckdb:data/lake.duckdb", { db_type: "duckdb", database: "data/lake.duckdb" }, []],
  ["sqlite:///srv/app.db", { db_type: "sqlite", database: "/srv/app.db" }, []]
]

describe("connection URLs and connections from the environment", () => {
  let gateway: Gateway
  let admin: string
  let database: TestDatabase
  const dataDir = tempDataDir()
  const sqliteFile = path.join(dataDir, "env.sqlite")

  const start = (env: Record<string, string>) => startGateway({ dataDir, env })
  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: admin, ...options })

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    const file = new Database(sqliteFile)
    file.exec("create table t (id int)")
    file.close()
    gateway = await start({
      SP_CONNECTION_WAREHOUSE: `postgresql://root:env-pw-1@127.0.0.1:5432/${database.name}`,
      SP_CONNECTION_LOCAL_FILE: `sqlite:${sqliteFile}`
    })
    admin = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it.skipIf(skip)("parse-url reads all eleven URL forms into fields, naming secrets without echoing them", async () => {
    for (const [url, fields, secrets] of FORMS) {
      const parsed = await api("/api/connections/parse-url", { body: { url } })
      expect(parsed.status, url).toBe(200)
      expect(parsed.json.db_type).toBe(fields["db_type"])
      expect(parsed.json.fields, url).toEqual(fields)
      expect(parsed.json.secrets_present).toEqual(secrets)
      expect(parsed.text).not.toMatch(/s3cr|dapi0123|"pw"/)
    }
    const types = new Set(FORMS.map(([, fields]) => fields["db_type"]))
    expect(types.size).toBe(11)
  })

  it.skipIf(skip)("build-url writes a URL that parses back to the same fields, without secrets", async () => {
    for (const [url, fields] of FORMS) {
      const built = await api("/api/connections/build-url", { body: { name: "x", ...fields } })
      expect(built.status, `${url}: ${built.text}`).toBe(200)
      const reparsed = await api("/api/connections/parse-url", { body: { url: built.json.url } })
      expect(reparsed.json.fields, `${url} -> ${built.json.url}`).toEqual(fields)
    }
    const withSecret = await api("/api/connections/build-url", {
      body: { name: "x", db_type: "postgresql", host: "h", database: "d", username: "u", password: "never-in-url" }
    })
    expect(withSecret.json).toEqual({ url: "postgresql://u@h/d", secrets_omitted: ["password"] })
  })

  it.skipIf(skip)("validate-url says what is missing or wrong; bad bodies are 400", async () => {
    expect((await api("/api/connections/validate-url", { body: { url: FORMS[0]![0] } })).json).toEqual({ valid: true, db_type: "postgresql", errors: [] })
    const missing = await api("/api/connections/validate-url", { body: { url: "postgresql://db.example.com" } })
    expect(missing.json).toEqual({ valid: false, db_type: "postgresql", errors: ["database: is missing", "username: is missing"] })
    const unknown = await api("/api/connections/validate-url", { body: { url: "oracle://x/y" } })
    expect(unknown.json.valid).toBe(false)
    expect(unknown.json.errors[0]).toMatch(/must start with one of postgresql:/)
    const badMode = await api("/api/connections/parse-url", { body: { url: "postgresql://u@h/d?sslmode=sometimes" } })
    expect(badMode.status).toBe(400)
    expect(badMode.json).toMatchObject({ code: "invalid_request" })
    expect(badMode.json.message).toContain("sslmode")
    expect((await api("/api/connections/parse-url", { body: {} })).status).toBe(400)
    expect((await api("/api/connections/parse-url", { body: { url: "x".repeat(9000) } })).status).toBe(400)
    expect((await api("/api/connections/build-url", { body: { name: "x", db_type: "postgresql" } })).status).toBe(400)
  })

  it.skipIf(skip)("SP_CONNECTION_<NAME> connections are listed read-only, work, and follow the environment across restarts", async () => {
    const listed = await api("/api/connections")
    const env = listed.json.items.filter((c: { source: string }) => c.source === "env")
    expect(env.map((c: { name: string }) => c.name)).toEqual(["local_file", "warehouse"])
    const warehouse = await api("/api/connections/warehouse")
    expect(warehouse.json).toMatchObject({ read_only: true, source: "env", password_set: true, database: database.name })
    expect(warehouse.text).not.toContain("env-pw-1")
    expect((await api("/api/connections/warehouse/test", { method: "POST" })).json).toMatchObject({ ok: true })
    expect((await api("/api/connections/local_file/test", { method: "POST" })).json).toMatchObject({ ok: true })

    const edit = await api("/api/connections/warehouse", { method: "PUT", body: { ...warehouse.json, description: "x" } })
    expect([400, 403]).toContain(edit.status)
    const put = await api("/api/connections/warehouse", {
      method: "PUT",
      body: { name: "warehouse", db_type: "postgresql", host: "127.0.0.1", database: database.name, username: "root" }
    })
    expect(put.status).toBe(403)
    expect(put.json.message).toContain("SP_CONNECTION_WAREHOUSE")
    expect((await api("/api/connections/warehouse", { method: "DELETE" })).status).toBe(403)
    expect((await api("/api/connections/warehouse/clone", { body: { name: "mine" } })).status).toBe(201)
    expect((await api("/api/connections/mine")).json).toMatchObject({ read_only: false, source: "api", password_set: true })

    await gateway.stop()
    gateway = await start({ SP_CONNECTION_WAREHOUSE: `postgresql://root@127.0.0.1:5432/${database.name}?sslmode=disable` })
    const after = await api("/api/connections")
    expect(after.json.items.map((c: { name: string; source: string }) => [c.name, c.source])).toEqual([
      ["mine", "api"],
      ["warehouse", "env"]
    ])
    expect((await api("/api/connections/warehouse")).json).toMatchObject({ password_set: false, tls: { mode: "disable" } })
  })
})
