import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { OrgId, UserId } from "../../src/domain/Ids"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { ApiKeys } from "../../src/services/ApiKeys"
import { DbBranches } from "../../src/services/DbBranches"
import { request, type RequestOptions } from "../support/Http"
import { branchDatabasesOf, localOperator, startInProcess } from "../support/InProcess"
import { createTestDatabase, dropBranchDatabases, postgresAvailable, queryDatabase, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const OTHER_ORG = OrgId.make("org_branch_other")


describe.skipIf(skip)("database branches as template copies on the connection's PostgreSQL (issue 30)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let database: TestDatabase
  let writer: string
  let reader: string
  let stranger: string

  beforeAll(async () => {
    database = await createTestDatabase()
    await database.query(`create schema analytics; create table analytics.orders (id int primary key, amount numeric);
      insert into analytics.orders values (1, 10), (2, 20); create view analytics.big_orders as select * from analytics.orders where amount > 15`)
    gateway = await startInProcess({ SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000" })
    const admin = await gateway.keyWith(["read", "query", "write", "admin"])
    writer = await gateway.keyWith(["read", "write"])
    reader = await gateway.keyWith(["read"])
    stranger = await gateway.runtime.runPromise(
      Effect.gen(function* () {
        yield* (yield* OrgsRepo).ensureMember({ orgId: OTHER_ORG, orgName: "other", userId: UserId.make("user_b"), role: "admin" })
        return (yield* (yield* ApiKeys).create({ ...localOperator, orgId: OTHER_ORG, userId: UserId.make("user_b") }, { name: "b", scopes: ["read", "write", "admin"] })).key
      }).pipe(Effect.provide(OrgsRepo.Default))
    )
    const connection = { name: "wh", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    // A query first, so the gateway holds a pooled session on the database a branch copies.
    expect((await request(gateway.url, "/api/query", { key: admin, body: { connection_name: "wh", sql: "select count(*) from analytics.orders" } })).status).toBe(200)
  }, 60_000)
  afterAll(async () => {
    const left = gateway === undefined ? [] : await branchDatabasesOf(gateway)
    await gateway?.stop()
    await dropBranchDatabases(left)
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: writer, ...options })
  const branches = "/api/connections/wh/dbbranch/projects/jaffle/branches"

  it("makes a branch as a copy owned by a role that is no superuser, lists, diffs and deletes it", async () => {
    const made = await api(branches, { body: { name: "dev" } })
    expect(made.status, made.text).toBe(201)
    expect(made.json).toMatchObject({ connection_name: "wh", project: "jaffle", name: "dev", parent: "main", provider: "postgres_template", status: "ready", owner_job: null })
    expect(made.text).not.toMatch(/password|secret|owner_role/)
    const db = made.json.database as string
    expect(db).toMatch(/^sb_[0-9a-f]{24}$/)
    const [role] = await queryDatabase<{ rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean }>("postgres", "select rolsuper, rolcreatedb, rolcreaterole from pg_roles where rolname = $1", [db])
    expect(role).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false })
    const owners = await queryDatabase<{ relname: string; owner: string }>(db, "select c.relname, pg_get_userbyid(c.relowner) as owner from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'analytics' and c.relkind in ('r', 'v') order by 1")
    expect(owners).toEqual([
      { relname: "big_orders", owner: db },
      { relname: "orders", owner: db }
    ])
    expect(await queryDatabase(db, "select id, amount from analytics.orders order by id")).toEqual([
      { id: 1, amount: "10" },
      { id: 2, amount: "20" }
    ])

    // A branch of the branch, then a change in it: the diff says what differs from main.
    expect((await api(branches, { body: { name: "feature", parent: "dev" } })).status).toBe(201)
    const feature = (await request(gateway.url, branches, { key: reader })).json.items.find((b: { name: string }) => b.name === "feature")
    // As dbt would through the proxy: the branch's role owns what it builds (made here as the server's admin, then handed over).
    await queryDatabase(feature.database, `alter table analytics.orders add column region text; create table analytics.customers (id int); alter table analytics.customers owner to ${feature.database}`)
    const diff = await request(gateway.url, "/api/connections/wh/dbbranch/branch-diff?project=jaffle&compare=feature", { key: reader })
    expect(diff.status, diff.text).toBe(200)
    expect(diff.json.diff.added_tables).toEqual(["analytics.customers"])
    expect(diff.json.diff.changed_tables).toEqual([expect.objectContaining({ table: "analytics.orders", added_columns: [{ name: "region", type: "text" }] })])

    expect((await request(gateway.url, branches, { key: reader })).json.items.map((b: { name: string }) => b.name)).toEqual(["dev", "feature"])
    expect((await request(gateway.url, `${branches}/dev`, { key: reader, method: "DELETE" })).status).toBe(403)
    expect((await api(`${branches}/dev`, { method: "DELETE" })).json).toEqual({ name: "dev", deleted: true })
    expect(await queryDatabase("postgres", "select 1 from pg_database where datname = $1", [db])).toEqual([])
    expect(await queryDatabase("postgres", "select 1 from pg_roles where rolname = $1", [db])).toEqual([])
    expect((await api(`${branches}/dev`, { method: "DELETE" })).status).toBe(404)
  })

  it("refuses protected names, taken names, unknown parents, other connections and another org's callers", async () => {
    for (const name of ["main", "staging", "PROD"]) {
      const refused = await api(branches, { body: { name } })
      expect([name, refused.status, refused.json.code]).toEqual([name, 400, "invalid_request"])
      expect((await api(`${branches}/${name}`, { method: "DELETE" })).status).toBe(400)
    }
    expect((await api(branches, { body: { name: "x", parent: "nope" } })).status).toBe(404)
    expect((await api(branches, { body: { name: "bad name" } })).status).toBe(400)
    expect((await api(branches, { body: { name: "x", lease_seconds: 5 } })).status).toBe(400)
    expect((await api("/api/connections/missing/dbbranch/projects/jaffle/branches", { body: { name: "x" } })).status).toBe(404)
    expect((await api(branches, { body: { name: "twice" } })).status).toBe(201)
    const taken = await api(branches, { body: { name: "twice" } })
    expect([taken.status, taken.json.code]).toEqual([409, "conflict"])
    for (const [method, route] of [
      ["GET", branches],
      ["POST", branches],
      ["DELETE", `${branches}/twice`],
      ["GET", "/api/connections/wh/dbbranch/branch-diff?project=jaffle&compare=twice"]
    ] as const) {
      const refused = await request(gateway.url, route, { key: stranger, method, ...(method === "POST" ? { body: { name: "mine" } } : {}) })
      expect([method, route, refused.status]).toEqual([method, route, 404])
    }
  })

  it("a connection with branches is not deleted out from under them (its copies would be left on its server)", async () => {
    const admin = await gateway.keyWith(["read", "query", "write", "admin"])
    const connection = { name: "doomed", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    const route = "/api/connections/doomed/dbbranch/projects/p/branches"
    expect((await api(route, { body: { name: "kept" } })).status).toBe(201)
    const refused = await request(gateway.url, "/api/connections/doomed", { key: admin, method: "DELETE" })
    expect([refused.status, refused.json.code]).toEqual([409, "conflict"])
    expect(refused.json.message).toMatch(/has 1 database branch: delete it first/)
    expect((await request(gateway.url, "/api/connections/doomed", { key: admin })).status).toBe(200)
    expect((await api(`${route}/kept`, { method: "DELETE" })).status).toBe(200)
    expect((await request(gateway.url, "/api/connections/doomed", { key: admin, method: "DELETE" })).status).toBe(204)
  })

  it("the reaper deletes branches whose lease ran out or whose job ended, and leaves the rest", async () => {
    const leased = (await api(branches, { body: { name: "leased", lease_seconds: 60 } })).json
    expect(leased.lease_expires_at).not.toBeNull()
    const kept = (await api(branches, { body: { name: "kept", lease_seconds: 3600 } })).json
    await gateway.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`update db_branches set lease_expires_at = now() - interval '1 second' where id = ${leased.id}`))
    const reaped = await gateway.runtime.runPromise(Effect.flatMap(DbBranches, (b) => b.reapDue()))
    expect(reaped).toBe(1)
    expect(await queryDatabase("postgres", "select 1 from pg_database where datname = $1", [leased.database])).toEqual([])
    expect((await request(gateway.url, branches, { key: reader })).json.items.map((b: { name: string }) => b.name)).toContain("kept")
    expect(await queryDatabase("postgres", "select 1 as one from pg_database where datname = $1", [kept.database])).toEqual([{ one: 1 }])
  })
})
