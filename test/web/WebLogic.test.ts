import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Connection, ConnectionInput, SECRET_FIELDS } from "../../src/domain/Connection"
import { hourlySeries, niceMax } from "../../src/web/charts"
import { fieldsFor, formInput, formValuesOf, inputOf, secretStored } from "../../src/web/connectionFields"
import { changedDescriptions, type CuratedTable, sourceLabel } from "../../src/web/curation"
import { formatCell } from "../../src/web/format"
import { globsOf, usageOf, withRule } from "../../src/web/governance"
import { sqlConfigFor } from "../../src/web/sqlCompletion"

describe("the web app's own logic", () => {
  it("edits only what the gateway returns: every setting a connection accepts but its secrets comes back on GET", () => {
    const secrets: ReadonlySet<string> = new Set(SECRET_FIELDS)
    const accepted = new Set(ConnectionInput.members.flatMap((member) => Object.keys(member.fields)))
    expect([...accepted].filter((field) => !secrets.has(field) && !(field in Connection.fields))).toEqual([])
  })

  it("shows each db_type only its own fields, with secrets marked, choices the gateway accepts and a group for each", () => {
    const sqlite = fieldsFor("sqlite").map((f) => f.path)
    expect(sqlite).toContain("database")
    expect(sqlite).toContain("max_rows")
    expect(sqlite).not.toContain("host")
    expect(sqlite.filter((p) => p.startsWith("tls.") || p.startsWith("ssh_tunnel."))).toEqual([])
    const postgres = new Map(fieldsFor("postgresql").map((f) => [f.path, f]))
    expect(postgres.get("host")).toMatchObject({ required: true, kind: "text", group: "Connection" })
    expect(postgres.get("port")).toMatchObject({ required: false, kind: "number" })
    expect(postgres.get("password")).toMatchObject({ kind: "secret" })
    expect(postgres.get("tls.mode")).toMatchObject({ required: true, kind: "choice", group: "TLS", choices: ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] })
    expect(postgres.get("ssh_tunnel.private_key")).toMatchObject({ kind: "secret-text", group: "SSH tunnel" })
    expect(postgres.get("tags")).toMatchObject({ kind: "tags", group: "Description and tags" })
    expect(postgres.get("blocked_tables")).toMatchObject({ kind: "list", group: "Schema and tables" })
    expect(postgres.get("allowed_functions")).toMatchObject({ kind: "list", group: "Schema and tables" })
    expect(postgres.has("name")).toBe(false)
    expect(fieldsFor("clickhouse").find((f) => f.path === "protocol")?.choices).toEqual(["http"])
    expect(fieldsFor("bigquery").find((f) => f.path === "credentials_json")?.kind).toBe("secret-text")
    expect(fieldsFor("no-such-type")).toEqual([])
  })

  it("offers every field the gateway accepts, for every db_type", () => {
    for (const member of ConnectionInput.members) {
      const dbType = member.fields.db_type.literals[0]
      const paths = new Set(fieldsFor(dbType).map((f) => f.path))
      for (const [name, field] of Object.entries(member.fields)) {
        if (name === "db_type" || name === "name") continue
        // tls and ssh_tunnel are optional Structs: the form asks for each of their fields.
        const struct = (field as { from?: { fields?: object } }).from?.fields
        const expected = struct === undefined ? [name] : Object.keys(struct).map((leaf) => `${name}.${leaf}`)
        for (const path of expected) expect(paths.has(path), `${dbType} ${path}`).toBe(true)
      }
    }
  })

  it("turns the form's text into the body the gateway takes: numbers, arrays, nested groups only when used, empty secrets left out", () => {
    const values = {
      host: " db.internal ",
      port: "6432",
      database: "app",
      username: "reader",
      password: " spaced ",
      "tls.mode": "require",
      "ssh_tunnel.username": "",
      query_timeout: "30",
      max_rows: "500",
      tags: "prod, finance,,",
      blocked_tables: "secret_*\nhr.salaries",
      description: "   "
    }
    const body = formInput("postgresql", values)
    expect(body).toEqual({
      db_type: "postgresql",
      host: "db.internal",
      port: 6432,
      database: "app",
      username: "reader",
      password: " spaced ",
      tls: { mode: "require" },
      query_timeout: 30,
      max_rows: 500,
      tags: ["prod", "finance"],
      blocked_tables: ["secret_*", "hr.salaries"]
    })
    expect(Schema.decodeUnknownSync(ConnectionInput)({ ...body, name: "pg" })).toMatchObject({ tls: { mode: "require" } })
    // An edit that types no secret sends none, and the tunnel travels without its stored key.
    const edit = formInput("postgresql", { ...values, password: "", "ssh_tunnel.host": "bastion", "ssh_tunnel.username": "ops", "ssh_tunnel.private_key": "" })
    expect(edit["password"]).toBeUndefined()
    expect(edit["ssh_tunnel"]).toEqual({ host: "bastion", username: "ops" })
  })

  it("shows a stored connection in the form as text, secrets empty and flagged as stored", () => {
    const stored = {
      db_type: "postgresql",
      name: "warehouse",
      description: null,
      host: "db.internal",
      port: 5432,
      tags: ["prod", "finance"],
      max_rows: 500,
      blocked_tables: ["a", "b"],
      password_set: true,
      tls: { mode: "verify-ca", ca_pem: "-----BEGIN CERTIFICATE-----", client_key_pem_set: true },
      ssh_tunnel: { host: "bastion", port: 22, username: "ops", private_key_set: false, passphrase_set: false, password_set: true, host_key_fingerprint: null }
    }
    expect(formValuesOf("postgresql", stored)).toEqual({
      host: "db.internal",
      port: "5432",
      tags: "prod, finance",
      max_rows: "500",
      blocked_tables: "a\nb",
      "tls.mode": "verify-ca",
      "tls.ca_pem": "-----BEGIN CERTIFICATE-----",
      "ssh_tunnel.host": "bastion",
      "ssh_tunnel.port": "22",
      "ssh_tunnel.username": "ops"
    })
    const fields = new Map(fieldsFor("postgresql").map((f) => [f.path, f]))
    const kept = (path: string) => secretStored(stored, fields.get(path)!)
    expect(["password", "tls.client_key_pem", "ssh_tunnel.password", "ssh_tunnel.private_key"].map(kept)).toEqual([true, true, true, false])
  })

  it("turns a stored connection back into an input the gateway accepts, without secret flags, timestamps or nulls", () => {
    const stored = {
      db_type: "postgresql",
      name: "warehouse",
      host: "db.internal",
      port: 5432,
      database: "analytics",
      username: "reader",
      password_set: true,
      blocked_tables: ["secret_*"],
      tls: { mode: "require", client_key_pem_set: false },
      ssh_tunnel: { host: "bastion", port: 22, username: "ops", private_key_set: true, passphrase_set: false, password_set: false, host_key_fingerprint: null },
      source: "api",
      read_only: false,
      created_at: new Date(),
      updated_at: new Date()
    }
    const input = inputOf(stored)
    expect(input).toEqual({
      db_type: "postgresql",
      name: "warehouse",
      host: "db.internal",
      port: 5432,
      database: "analytics",
      username: "reader",
      blocked_tables: ["secret_*"],
      tls: { mode: "require" },
      ssh_tunnel: { host: "bastion", port: 22, username: "ops" }
    })
    expect(Schema.decodeUnknownSync(ConnectionInput)(input)).toEqual(input)
    expect(inputOf({ db_type: "no-such-type" })).toEqual({})
  })

  it("fills the hours the audit log has no rows for, so the chart spans the whole window", () => {
    const since = 1_700_000_000 - (1_700_000_000 % 3600)
    const series = hourlySeries([{ hour: since + 7200, success: 3, refused: 1, error: 0 }], since, since + 5 * 3600 + 10)
    expect(series.map((h) => h.hour - since)).toEqual([0, 3600, 7200, 10800, 14400, 18000])
    expect(series[2]).toEqual({ hour: since + 7200, success: 3, refused: 1, error: 0 })
    expect(series[0]).toEqual({ hour: since, success: 0, refused: 0, error: 0 })
    expect([0, 1, 3, 7, 12, 99, 101, 4999].map(niceMax)).toEqual([1, 1, 5, 10, 20, 100, 200, 5000])
  })

  it("keeps one PII rule per column, reads table globs one per line, and lists only the amounts a budget caps", () => {
    const rules = withRule([{ table: "customers", column: "email", action: "mask" }], { table: "Customers", column: "EMAIL", action: "hash" })
    expect(rules).toEqual([{ table: "Customers", column: "EMAIL", action: "hash" }])
    expect(withRule(rules, { table: "customers", column: "ssn", action: "redact" })).toHaveLength(2)
    expect(globsOf(" secret_*\n\nhr.salaries, audit.*  \n")).toEqual(["secret_*", "hr.salaries", "audit.*"])
    const none = { queries: null, rows: null, bytes_scanned: null, cost: null, duration_ms: null }
    const budget = { limits: { ...none, queries: 10, rows: 1000 }, used: { ...none, queries: 4, rows: null } } as Parameters<typeof usageOf>[0]
    expect(usageOf(budget)).toEqual([
      { label: "Queries", used: 4, limit: 10 },
      { label: "Rows", used: 0, limit: 1000 }
    ])
  })

  it("completes a connection's tables and columns in its dialect, with bare names in the usual default schema", () => {
    const tables = [
      { schema: "public", name: "orders", columns: [{ name: "id" }, { name: "total" }] },
      { schema: "crm", name: "customers", columns: [{ name: "email" }] }
    ]
    const config = sqlConfigFor("postgresql", tables)
    expect(config.schema).toEqual({ public: { orders: ["id", "total"] }, crm: { customers: ["email"] } })
    expect(config.defaultSchema).toBe("public")
    expect(sqlConfigFor("sqlite", [tables[1]!]).defaultSchema).toBe("crm")
    expect(sqlConfigFor("trino", []).defaultSchema).toBeUndefined()
  })

  it("shows NULL and objects in a grid cell as a reader expects", () => {
    expect([null, undefined, 0, "", { a: 1 }, [1, 2]].map(formatCell)).toEqual(["NULL", "NULL", "0", "", '{"a":1}', "[1,2]"])
  })

  it("sends only the descriptions that changed, trimmed, with an emptied one as a clear", () => {
    const column = (name: string, comment: string | null) => ({ name, comment }) as unknown as CuratedTable["columns"][number]
    const table = { comment: "Orders", columns: [column("id", null), column("note", "Buyer text"), column("total", null)] } as unknown as CuratedTable
    expect(changedDescriptions(table, "Orders", { id: "", note: "Buyer text", total: "" })).toEqual({})
    expect(changedDescriptions(table, "  One row per order ", { id: " The key ", note: "", total: "" })).toEqual({
      description: "One row per order",
      columns: [
        { name: "id", description: "The key" },
        { name: "note", description: null }
      ]
    })
    expect(changedDescriptions(table, "", {})).toEqual({ description: null })
    expect([sourceLabel("manual"), sourceLabel("comment"), sourceLabel(null)]).toEqual(["written by hand", "the database's comment", null])
  })
})
