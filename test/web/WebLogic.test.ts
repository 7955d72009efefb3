import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { ConnectionInput } from "../../src/domain/Connection"
import { hourlySeries, niceMax } from "../../src/web/charts"
import { fieldsFor, inputOf } from "../../src/web/connectionFields"
import { changedDescriptions, type CuratedTable, sourceLabel } from "../../src/web/curation"
import { formatCell } from "../../src/web/format"
import { globsOf, usageOf, withRule } from "../../src/web/governance"
import { sqlConfigFor } from "../../src/web/sqlCompletion"

describe("the web app's own logic", () => {
  it("shows each db_type only its own fields, with secrets marked and choices listed", () => {
    const sqlite = fieldsFor("sqlite").map((f) => f.name)
    expect(sqlite).toContain("database")
    expect(sqlite).not.toContain("host")
    const postgres = new Map(fieldsFor("postgresql").map((f) => [f.name, f]))
    expect(postgres.get("host")).toMatchObject({ required: true, kind: "text" })
    expect(postgres.get("port")).toMatchObject({ required: false, kind: "number" })
    expect(postgres.get("password")).toMatchObject({ kind: "secret" })
    expect(fieldsFor("bigquery").find((f) => f.name === "credentials_json")?.kind).toBe("secret-text")
    expect(fieldsFor("no-such-type")).toEqual([])
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
