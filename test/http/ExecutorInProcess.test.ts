import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SluiceApi } from "../../src/api/Api"
import { ApiKeys } from "../../src/services/ApiKeys"
import { inProcessApp, localOperator } from "../support/InProcess"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const skip = !(await postgresAvailable())
const customers = skip ? null : await createTestDatabase()
await customers?.query(`create table orders (id int primary key, email text, total numeric);
  insert into orders select g, 'person' || g || '@example.com', g * 10 from generate_series(1, 50) g;
  create table payroll (id int primary key, salary int); insert into payroll values (1, 100)`)
afterAll(() => customers?.drop())

/** The typed client of the REST API, sending `key`. */
const clientWith = (key: string) =>
  HttpApiClient.make(SluiceApi, { transformClient: HttpClient.mapRequest(HttpClientRequest.setHeader("x-api-key", key)) })

type Client = Effect.Effect.Success<ReturnType<typeof clientWith>>

/** A refusal as the typed client reads it: the error class the response's status and code declare, and that code. */
const refusalOf = (client: Client, connection: string, sql: string) =>
  Effect.map(Effect.flip(client.query.run({ payload: { connection_name: connection, sql } })), (error) => [error._tag, "code" in error ? error.code : null])

describe.skipIf(skip)("the governed executor, in process", () => {
  layer(inProcessApp(), { timeout: 60_000, excludeTestServices: true })((it) => {
    /** A client with a fresh key, and a connection `name` to the customer database with payroll blocked and emails redacted. */
    const setUp = (name: string) => Effect.gen(function* () {
      const key = (yield* (yield* ApiKeys).create(localOperator, { name: `executor-${Math.random()}`, scopes: ["read", "query", "write", "admin"] })).key
      const client = yield* clientWith(key)
      yield* client.connections.create({
        payload: { name, db_type: "postgresql", host: "127.0.0.1", port: 5432, database: customers!.name, username: "root", blocked_tables: ["payroll"] }
      })
      yield* client.pii.put({ path: { name }, payload: { rules: [{ table: "orders", column: "email", action: "redact" }] } })
      return { client }
    })

    it.effect("answers a read with the rows, capped where asked, the PII column redacted, and audits it", () =>
      Effect.gen(function* () {
        const { client } = yield* setUp("reads")
        const read = yield* client.query.run({ payload: { connection_name: "reads", sql: "select id, email, total from orders where id <= 3 order by id" } })
        expect(read.rows.map((row) => row[0])).toEqual([1, 2, 3])
        expect(JSON.stringify(read.rows)).not.toContain("@example.com")
        expect(read.pii_masked.map((m) => m.column)).toEqual(["email"])
        expect(read.completeness).toBe("complete")
        const capped = yield* client.query.run({ payload: { connection_name: "reads", sql: "select id from orders order by id", row_limit: 5 } })
        expect([capped.row_count, capped.completeness, capped.truncated_at]).toEqual([5, "truncated", 5])
        const audit = yield* client.audit.list({ urlParams: { connection: "reads" } })
        const entry = audit.items.find((e) => e.details?.["query_id"] === read.query_id)
        expect([entry?.outcome, entry?.rows]).toEqual(["success", 3])
      })
    )

    it.effect("refuses a write, a second statement and a blocked table before they reach the database, each audited as refused", () =>
      Effect.gen(function* () {
        const { client } = yield* setUp("refusals")
        const run = (sql: string) => refusalOf(client, "refusals", sql)
        for (const sql of ["delete from orders", "select 1; delete from orders", "select salary from payroll", "select * from (select salary from payroll) p"]) {
          expect(yield* run(sql)).toEqual(["QueryBlocked", "query_blocked"])
        }
        const [{ n }] = (yield* Effect.promise(() => customers!.query("select count(*)::int as n from orders"))) as [{ n: number }]
        expect(n).toBe(50)
        const refused = yield* client.audit.list({ urlParams: { connection: "refusals", outcome: "refused" } })
        expect(refused.items.filter((e) => e.block_reason !== null)).toHaveLength(4)
      })
    )

    it.effect("an unknown connection is a 404, a failing statement the database's own error, and a table no scan lists (on a connection with PII rules) a refusal", () =>
      Effect.gen(function* () {
        const { client } = yield* setUp("failures")
        expect(yield* refusalOf(client, "nope", "select 1")).toEqual(["NotFound", "not_found"])
        expect(yield* refusalOf(client, "failures", "select no_such_column from orders")).toEqual(["QueryFailed", "query_failed"])
        expect(yield* refusalOf(client, "failures", "select * from no_such_table")).toEqual(["QueryBlocked", "query_blocked"])
      })
    )
  })
})
