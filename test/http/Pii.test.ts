import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

describe("PII rules and masking over HTTP", () => {
  let gateway: Gateway
  let admin: string
  let reader: string
  let database: TestDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query(`create table customers (id int primary key, name text, email text, ssn text, phone text);
      insert into customers values (1, 'Ada', 'ada@example.com', '123-45-6789', '+33 1 23 45 67 89'), (2, 'Bo', 'bo@example.com', null, '+49 30 1234567')`)
    gateway = await startApp({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_SCHEMA_FRESH_SECONDS: "3", SP_PER_KEY_RPM: "10000" } })
    admin = await localKey(gateway)
    reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "reader", scopes: ["read", "query"] } })).json.key
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root", result_cache_ttl: 60 }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: admin, ...options })
  const query = (sql: string, connection = "pg") => request(gateway.url, "/api/query", { key: reader, body: { connection_name: connection, sql } })
  const rules = [
    { table: "customers", column: "email", action: "mask" },
    { table: "public.customers", column: "ssn", action: "redact" },
    { table: "customers", column: "phone", action: "hash" }
  ]

  it.skipIf(skip)("rules are stored per connection and every result of a query over them is masked by lineage", async () => {
    expect((await api("/api/connections/pg/pii", { key: reader })).json).toEqual({ rules: [], version: 0 })
    const saved = await api("/api/connections/pg/pii", { method: "PUT", body: { rules } })
    expect(saved.status).toBe(200)
    expect(saved.json).toEqual({ rules, version: 1 })
    expect((await api("/api/connections/pg/pii", { key: reader })).json).toEqual(saved.json)

    const all = await query("select * from customers order by id")
    expect(all.status).toBe(200)
    expect(all.json.pii_masked).toEqual([
      { column: "email", rule: "mask" },
      { column: "ssn", rule: "redact" },
      { column: "phone", rule: "hash" }
    ])
    const [ada, bo] = all.json.rows
    expect(ada.slice(0, 4)).toEqual([1, "Ada", "****.com", "[REDACTED]"])
    expect(ada[4]).toMatch(/^[0-9a-f]{64}$/)
    // Redacted whole, at the source: whether a value is there at all is part of the value.
    expect(bo[3]).toBe("[REDACTED]")

    const derived = await query("with c as (select id, email as contact, name || ' ' || email as label from customers) select contact, label, id from c order by id")
    expect(derived.json.pii_masked).toEqual([
      { column: "contact", rule: "mask" },
      { column: "label", rule: "redact" }
    ])
    expect(derived.json.rows[0]).toEqual(["****.com", "[REDACTED]", 1])

    // The same phone hashes to the same value in another query: joins and counts on hashes still work.
    const hashed = await query("select phone from customers where id = 1")
    expect(hashed.json.rows[0][0]).toBe(ada[4])
    // Counted as the database sees them, masked: every email ends .com, so their masked values are one.
    expect((await query("select count(distinct email), count(distinct phone) from customers")).json).toMatchObject({ rows: [["1", "2"]], pii_masked: [] })

    const logs = await api("/api/audit?event_type=query&limit=20")
    const row = logs.json.items.find((r: { request_id: string }) => r.request_id === derived.headers["x-request-id"])
    expect(row.details.pii_masked).toEqual(derived.json.pii_masked)
    expect(JSON.stringify(logs.json)).not.toContain("ada@example.com")
  })

  it.skipIf(skip)("a view over a PII table is masked by lineage through its definition, even one made after the last scan", async () => {
    // The first query above scanned the connection; these views did not exist then.
    await database.query(`create view customer_contacts as select id, email as contact, upper(name) as label, ssn from customers;
      create view contact_list as select contact, id from customer_contacts;
      create view customer_counts as select count(email) as emails from customers`)
    await new Promise((resolve) => setTimeout(resolve, 3_200))
    const contacts = await query("select * from customer_contacts order by id")
    expect(contacts.status, contacts.text).toBe(200)
    expect(contacts.json.pii_masked).toEqual([
      { column: "contact", rule: "mask" },
      { column: "ssn", rule: "redact" }
    ])
    expect(contacts.json.rows[0]).toEqual([1, "****.com", "ADA", "[REDACTED]"])
    // A view over the view, and a count that reveals no value.
    const list = await query("select contact from contact_list where id = 1")
    expect(list.json).toMatchObject({ rows: [["****.com"]], pii_masked: [{ column: "contact", rule: "mask" }] })
    expect((await query("select emails from customer_counts")).json).toMatchObject({ rows: [["2"]], pii_masked: [] })
    expect(JSON.stringify(contacts.json) + JSON.stringify(list.json)).not.toContain("ada@example.com")
  }, 30_000)

  it.skipIf(skip)("a rule change is never answered from results cached under the old rules; a clone keeps the rules", async () => {
    const sql = "select id, email from customers where id = 1"
    expect((await query(sql)).json).toMatchObject({ rows: [[1, "****.com"]], cached: false })
    expect((await query(sql)).json).toMatchObject({ rows: [[1, "****.com"]], cached: true })
    const dropped = await api("/api/connections/pg/pii", { method: "PUT", body: { rules: [{ table: "customers", column: "email", action: "drop" }] } })
    expect(dropped.json.version).toBe(2)
    expect((await query(sql)).json).toMatchObject({ columns: [{ name: "id" }], rows: [[1]], cached: false, pii_masked: [{ column: "email", rule: "drop" }] })

    expect((await api("/api/connections/pg/clone", { body: { name: "pg_copy" } })).status).toBe(201)
    expect((await api("/api/connections/pg_copy/pii")).json.rules).toEqual(dropped.json.rules)
    expect((await query(sql, "pg_copy")).json.rows).toEqual([[1]])

    // An edit of the connection keeps its rules.
    const edited = await api("/api/connections/pg", {
      method: "PUT",
      body: { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root", description: "x" }
    })
    expect(edited.status).toBe(200)
    expect((await api("/api/connections/pg/pii")).json).toMatchObject({ version: 2 })
  })

  it.skipIf(skip)("detect-pii proposes rules from column names and sampled values; detect-and-save adds them", async () => {
    // Dates (a date column, and dates kept as text) are not phone numbers, though their digits and dashes look like one.
    await database.query(`create table people (id int, work_email text, contact text, card text, payout text, seen_from text, notes text, total bigint, joined date, shipped text);
      insert into people values
        (1, 'a@x.io', 'ada@example.com', '4111 1111 1111 1111', 'DE89370400440532013000', '10.0.0.1', 'likes tea', 15551234567, '2024-01-05', '2024-01-07'),
        (2, 'b@x.io', 'bo@example.org', '5500-0000-0000-0004', 'GB82WEST12345698765432', '192.168.1.20', 'n/a', 15559876543, '2023-11-30', '30.11.2023'),
        (3, 'c@x.io', 'cy@example.net', '4012888888881881', 'FR1420041010050500013M02606', '2001:db8::1', 'vip', 15550001111, '2022-02-28', '2022-03-01');
      create table secret_stuff (email text)`)
    const base = { db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await api("/api/connections", { body: { name: "scan", ...base, blocked_tables: ["secret_stuff"] } })).status).toBe(201)

    const detected = await api("/api/connections/scan/detect-pii", { method: "POST" })
    expect(detected.status).toBe(200)
    const byColumn = Object.fromEntries(
      detected.json.proposed.filter((p: { table: string }) => p.table === "public.people").map((p: { column: string; kind: string; reason: string }) => [p.column, `${p.kind}/${p.reason}`])
    )
    expect(byColumn).toEqual({
      work_email: "email/column_name",
      contact: "email/sampled_values",
      card: "card/sampled_values",
      payout: "iban/sampled_values",
      seen_from: "ip/sampled_values"
    })
    expect(detected.json.skipped).toEqual([{ table: "public.secret_stuff", reason: expect.stringMatching(/secret_stuff is blocked/) }])
    expect(JSON.stringify(detected.json)).not.toContain("ada@example.com")

    // Every sample is a governed query with its own audit row under the request: the refused one too.
    const requestId = detected.headers["x-request-id"]
    const rows = (await api("/api/audit?event_type=query&limit=100")).json.items.filter(
      (row: { request_id: string }) => row.request_id === requestId
    ) as Array<{ sql: string; outcome: string; details: { parent: { event_type: string } } }>
    const sampled = rows.map((row) => [row.sql.split(" from ")[1], row.outcome])
    expect(sampled).toHaveLength(detected.json.scanned_tables + detected.json.skipped.length)
    expect(sampled).toContainEqual(['"public"."people"', "success"])
    expect(sampled).toContainEqual(['"public"."secret_stuff"', "refused"])
    expect(rows.every((row) => row.details.parent.event_type === "pii_detect")).toBe(true)

    // The samples are charged to the caller's budgets: a key whose budget is spent gets no scan.
    const scanner = (await api("/api/keys", { body: { name: "scanner", scopes: ["read", "query", "write"] } })).json
    expect((await api("/api/budget", { body: { key_id: scanner.id, max_queries: 1 } })).status).toBe(201)
    const spent = await api("/api/connections/scan/detect-pii", { key: scanner.key, method: "POST" })
    expect([spent.status, spent.json.code]).toEqual([429, "budget_exhausted"])
    expect((await api("/api/connections/scan/pii")).json.rules).toEqual([])

    const saved = await api("/api/connections/scan/detect-and-save-pii", { method: "POST" })
    expect(saved.status).toBe(200)
    expect(saved.json.policy.version).toBe(1)
    expect(saved.json.policy.rules).toContainEqual({ table: "public.people", column: "card", action: "redact" })
    const masked = await query("select contact, card, notes from people where id = 1", "scan")
    expect(masked.json.rows).toEqual([["****.com", "[REDACTED]", "likes tea"]])
    // A second run proposes nothing new for columns already covered.
    expect((await api("/api/connections/scan/detect-pii", { method: "POST" })).json.proposed.filter((p: { table: string }) => p.table === "public.people")).toEqual([])
    expect((await api("/api/connections/scan/detect-pii", { key: reader, method: "POST" })).status).toBe(403)
  })

  it.skipIf(skip)("bad rules are refused with the field named and change nothing", async () => {
    const before = (await api("/api/connections/pg/pii")).json
    const bad: Array<[unknown, RegExp]> = [
      [{ rules: [{ table: "customers", column: "email", action: "shred" }] }, /action/],
      [{ rules: [{ table: "customers", column: "e mail", action: "mask" }] }, /column must be a column name/],
      [{ rules: [{ table: "a.b.c.d", column: "email", action: "mask" }] }, /table must be a name/],
      [{ rules: [{ table: "customers", column: "email", action: "mask", extra: 1 }] }, /extra/],
      [{ rule: [] }, /rules/]
    ]
    for (const [body, message] of bad) {
      const refused = await api("/api/connections/pg/pii", { method: "PUT", body })
      expect([refused.status, refused.json.code], JSON.stringify(body)).toEqual([400, "invalid_request"])
      expect(refused.json.message).toMatch(message)
    }
    expect((await api("/api/connections/pg/pii", { key: reader, method: "PUT", body: { rules: [] } })).status).toBe(403)
    expect((await api("/api/connections/nope/pii")).status).toBe(404)
    expect((await api("/api/connections/pg/pii")).json).toEqual(before)
  })
})
