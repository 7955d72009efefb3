import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DbBranches } from "../../src/services/DbBranches"
import { startNeonFake } from "../fakes/NeonFake"
import { request, type RequestOptions } from "../support/Http"
import { startInProcess } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, queryDatabase, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const API_KEY = `neon_${randomBytes(16).toString("hex")}`

describe.skipIf(skip)("database branches on a hosted branching service (Neon's API, a protocol fake) (issue 30)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let neon: Awaited<ReturnType<typeof startNeonFake>>
  let database: TestDatabase
  let admin: string
  let builder: string
  const owner = `neon_owner_${randomBytes(4).toString("hex")}`
  const ownerPassword = randomBytes(12).toString("hex")

  beforeAll(async () => {
    database = await createTestDatabase()
    // As on such a service: the project's database belongs to a role that is no superuser, copied with every branch.
    await queryDatabase("postgres", `create role ${owner} login nosuperuser password '${ownerPassword}'`)
    await database.query(`alter database ${database.name} owner to ${owner}; set role ${owner};
      create schema analytics; create table analytics.orders (id int primary key, amount numeric, email text);
      insert into analytics.orders values (1, 10, 'ada@example.org'), (2, 20, 'bo@example.org');
      create schema secret; create table secret.salaries (name text, salary int); insert into secret.salaries values ('ceo', 999999)`)
    neon = await startNeonFake({ apiKey: API_KEY, projectId: "proj-quiet-sun", database: database.name })
    gateway = await startInProcess({ SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000", SP_NEON_API_URL: neon.url }, { dbtProxy: true })
    admin = await gateway.keyWith(["read", "query", "write", "admin"])
    builder = await gateway.keyWith(["read", "write", "dbt_proxy"])
    const connection = {
      name: "lake",
      db_type: "postgresql",
      host: "127.0.0.1",
      port: 5432,
      database: database.name,
      username: owner,
      password: ownerPassword,
      blocked_tables: ["secret.*"],
      branching: { service: "neon", project_id: "proj-quiet-sun", api_key: API_KEY }
    }
    const made = await request(gateway.url, "/api/connections", { key: admin, body: connection })
    expect(made.status, made.text).toBe(201)
    expect(made.json.branching).toEqual({ service: "neon", project_id: "proj-quiet-sun", parent_branch_id: null, api_key_set: true })
    expect(made.text).not.toContain(API_KEY)
    const rules = { rules: [{ table: "analytics.orders", column: "email", action: "mask" }] }
    expect((await request(gateway.url, "/api/connections/lake/pii", { key: admin, method: "PUT", body: rules })).status).toBe(200)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await neon?.stop()
    await database?.drop()
    await queryDatabase("postgres", `drop role if exists ${owner}`).catch(() => undefined)
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: builder, ...options })
  const branches = "/api/connections/lake/dbbranch/projects/jaffle/branches"
  const neonRequests = () => neon.requests.map((r) => `${r.method} ${r.path.replace(/\/api\/v2\/projects\/proj-quiet-sun/, "")}`)

  it("makes a governed branch at the service, builds into it through the dbt proxy, diffs and deletes it", async () => {
    const made = await api(branches, { body: { name: "dev" } })
    expect(made.status, made.text).toBe(201)
    expect(made.json).toMatchObject({ name: "dev", parent: "main", provider: "hosted", status: "ready", database: database.name })
    expect(made.json.governance).toEqual({ dropped: ["secret.salaries"], masked: ["analytics.orders"], policy: expect.stringMatching(/^.+:\d+:\d+$/) })
    expect(made.text).not.toMatch(/password|secret_|owner_role|provider_ref|127\.0\.0\.1/)
    const atService = neon.branchNamed(`sluice-${made.json.id}`)!
    expect(atService.ready).toBe(true)
    expect(neon.requests.find((r) => r.method === "POST")?.body).toEqual({ branch: { name: `sluice-${made.json.id}` }, endpoints: [{ type: "read_write" }] })
    // The copy is governed; the connection's own database is untouched.
    expect(await queryDatabase(atService.physical, "select email from analytics.orders order by id")).toEqual([{ email: "****.org" }, { email: "****.org" }])
    expect(await queryDatabase(atService.physical, "select count(*)::int as n from pg_class where relname = 'salaries'")).toEqual([{ n: 0 }])
    expect(await database.query("select email from analytics.orders order by id")).toEqual([{ email: "ada@example.org" }, { email: "bo@example.org" }])

    // dbt builds into the branch through the proxy, which reaches it on the service's endpoint.
    const minted = await api("/api/dbt-proxy/run-tokens", { body: { connection_name: "lake", project: "jaffle", branch: "dev", run_id: "run-h" } })
    expect(minted.status, minted.text).toBe(201)
    const client = new pg.Client({ host: "127.0.0.1", port: gateway.dbtProxyPort, user: "dbt", database: "x", password: minted.json.token })
    await client.connect()
    try {
      await client.query("create table analytics.order_totals as select count(*) as n, sum(amount) as total from analytics.orders")
      expect((await client.query("select n::int, total::int from analytics.order_totals")).rows).toEqual([{ n: 2, total: 30 }])
      await expect(client.query("copy analytics.orders to program 'id'")).rejects.toThrow()
    } finally {
      await client.end()
    }
    expect(await queryDatabase(atService.physical, "select count(*)::int as n from analytics.order_totals")).toEqual([{ n: 1 }])
    expect(await database.query("select count(*)::int as n from pg_class where relname = 'order_totals'")).toEqual([{ n: 0 }])

    const diff = await api("/api/connections/lake/dbbranch/branch-diff?project=jaffle&compare=dev")
    expect(diff.status, diff.text).toBe(200)
    expect(diff.json.diff.added_tables).toEqual(["analytics.order_totals"])

    // A branch of the branch is the service's branch of the service's branch.
    const child = await api(branches, { body: { name: "feature", parent: "dev" } })
    expect(child.status, child.text).toBe(201)
    expect(neon.branchNamed(`sluice-${child.json.id}`)?.parentId).toBe(atService.id)
    expect((await api(`${branches}/feature`, { method: "DELETE" })).json).toEqual({ name: "feature", deleted: true })

    expect((await api(`${branches}/dev`, { method: "DELETE" })).json).toEqual({ name: "dev", deleted: true })
    expect(neon.branchNamed(`sluice-${made.json.id}`)).toBeUndefined()
    expect(await queryDatabase("postgres", "select 1 from pg_database where datname = $1", [atService.physical])).toEqual([])
    expect((await api(`${branches}/dev`, { method: "DELETE" })).status).toBe(404)
    // The key went to the service in its Authorization header and nowhere else: not in a path or body it was sent.
    expect(JSON.stringify(neon.requests)).not.toContain(API_KEY)
    expect(neonRequests()).toContain(`DELETE /branches/${atService.id}`)
  })

  it("a refused key, an unknown project and a service that is down each answer clearly and leave nothing behind", async () => {
    const put = (branching: Record<string, unknown>) =>
      request(gateway.url, "/api/connections/lake", {
        key: admin,
        method: "PUT",
        body: { name: "lake", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: owner, blocked_tables: ["secret.*"], branching }
      })
    // An edit that leaves the key out keeps it.
    const kept = await put({ service: "neon", project_id: "proj-quiet-sun" })
    expect(kept.json.branching?.api_key_set, kept.text).toBe(true)

    expect((await put({ service: "neon", project_id: "proj-quiet-sun", api_key: "wrong-key" })).status).toBe(200)
    const refused = await api(branches, { body: { name: "nokey" } })
    expect([refused.status, refused.json.code]).toEqual([409, "conflict"])
    expect(refused.json.message).toMatch(/refused the connection's API key/)
    expect(refused.text).not.toContain("wrong-key")

    expect((await put({ service: "neon", project_id: "proj-other", api_key: API_KEY })).status).toBe(200)
    const unknown = await api(branches, { body: { name: "noproject" } })
    expect([unknown.status, unknown.json.code]).toEqual([409, "conflict"])
    expect(unknown.json.message).toMatch(/no such project/)

    expect((await put({ service: "neon", project_id: "proj-quiet-sun", api_key: API_KEY })).status).toBe(200)
    expect((await api(branches)).json.items).toEqual([])
    expect(neon.branchCount()).toBe(0)
  })

  it("a branch whose making fails at the service is deleted there, and the reaper deletes a leased one", async () => {
    const failing = await startNeonFake({ apiKey: API_KEY, projectId: "proj-quiet-sun", database: database.name, failOperations: true })
    const other = await startInProcess({ SP_NEON_API_URL: failing.url })
    try {
      const key = await other.keyWith(["read", "write", "admin"])
      const connection = { name: "lake", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: owner, password: ownerPassword, branching: { service: "neon", project_id: "proj-quiet-sun", api_key: API_KEY } }
      expect((await request(other.url, "/api/connections", { key, body: connection })).status).toBe(201)
      const failed = await request(other.url, branches, { key, body: { name: "doomed" } })
      expect([failed.status, failed.json.code]).toEqual([503, "unavailable"])
      expect(failing.branchCount()).toBe(0)
      expect((await request(other.url, branches, { key })).json.items).toEqual([])
      await failing.stop()
      const down = await request(other.url, branches, { key, body: { name: "nobody-home" } })
      expect([down.status, down.json.code, down.json.message]).toEqual([503, "unavailable", "The branching service could not be reached; try again later"])
      // What the service may have made before it went quiet is looked for again by the reaper.
      expect((await request(other.url, branches, { key })).json.items.map((b: { name: string; status: string }) => [b.name, b.status])).toEqual([["nobody-home", "deleting"]])
    } finally {
      await other.stop()
      await failing.stop()
    }

    const leased = (await api(branches, { body: { name: "leased", lease_seconds: 60 } })).json
    expect(neon.branchNamed(`sluice-${leased.id}`)).toBeDefined()
    await gateway.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`update db_branches set lease_expires_at = now() - interval '1 second' where id = ${leased.id}`))
    expect(await gateway.runtime.runPromise(Effect.flatMap(DbBranches, (b) => b.reapDue()))).toBe(1)
    expect(neon.branchNamed(`sluice-${leased.id}`)).toBeUndefined()

    // One left by a process that died between asking the service and hearing back (no id recorded) is found by its name.
    const stuck = (await api(branches, { body: { name: "stuck" } })).json
    await gateway.runtime.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`update db_branches set status = 'creating', provider_ref = null, created_at = now() - interval '1 hour' where id = ${stuck.id}`)
    )
    expect(await gateway.runtime.runPromise(Effect.flatMap(DbBranches, (b) => b.reapDue()))).toBe(1)
    expect(neon.branchNamed(`sluice-${stuck.id}`)).toBeUndefined()
    expect(neon.branchCount()).toBe(0)
  })
  describe("under attack (attack 31)", () => {
    const hostile = async (answerEndpoint: { host: string; port: number }) => {
      const service = await startNeonFake({ apiKey: API_KEY, projectId: "proj-quiet-sun", database: database.name, answerEndpoint })
      const other = await startInProcess({ SP_NEON_API_URL: service.url })
      const key = await other.keyWith(["read", "write", "admin"])
      const connection = { name: "lake", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: owner, password: ownerPassword, blocked_tables: ["secret.*"], branching: { service: "neon", project_id: "proj-quiet-sun", api_key: API_KEY } }
      expect((await request(other.url, "/api/connections", { key, body: connection })).status).toBe(201)
      return { service, other, key }
    }

    it("F4: a service that answers with the connection's own database (or port 0) as the branch gets nothing governed or opened there", async () => {
      for (const endpoint of [{ host: "127.0.0.1", port: 5432 }, { host: "localhost", port: 5432 }, { host: "127.0.0.1", port: 0 }]) {
        const { service, other, key } = await hostile(endpoint)
        try {
          const made = await request(other.url, branches, { key, body: { name: "evil" } })
          expect([JSON.stringify(endpoint), made.status]).toEqual([JSON.stringify(endpoint), 503])
          expect(made.json.message).toMatch(/not a copy|port/)
          expect(service.branchCount()).toBe(0)
          expect((await request(other.url, branches, { key })).json.items).toEqual([])
        } finally {
          await other.stop()
          await service.stop()
        }
        // The connection's own database still holds everything.
        expect(await database.query("select count(*)::int as n from secret.salaries")).toEqual([{ n: 1 }])
        expect(await database.query("select email from analytics.orders order by id")).toEqual([{ email: "ada@example.org" }, { email: "bo@example.org" }])
      }
    })

    it("F1: a branch whose making failed and whose deleting at the service failed too is kept to delete later, not forgotten", async () => {
      const failing = await startNeonFake({ apiKey: API_KEY, projectId: "proj-quiet-sun", database: database.name, failOperations: true })
      const other = await startInProcess({ SP_NEON_API_URL: failing.url })
      try {
        const key = await other.keyWith(["read", "write", "admin"])
        const connection = { name: "lake", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: owner, password: ownerPassword, branching: { service: "neon", project_id: "proj-quiet-sun", api_key: API_KEY } }
        expect((await request(other.url, "/api/connections", { key, body: connection })).status).toBe(201)
        failing.failDeletes(501)
        const failed = await request(other.url, branches, { key, body: { name: "doomed" } })
        expect(failed.status).toBe(503)
        expect(failing.branchCount()).toBe(1)
        const kept = (await request(other.url, branches, { key })).json.items
        expect(kept.map((b: { name: string; status: string }) => [b.name, b.status])).toEqual([["doomed", "deleting"]])
        // The reaper takes it once the service answers again.
        failing.failDeletes(null)
        await other.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`update db_branches set created_at = now() - interval '1 hour'`))
        expect(await other.runtime.runPromise(Effect.flatMap(DbBranches, (b) => b.reapDue()))).toBe(1)
        expect(failing.branchCount()).toBe(0)
      } finally {
        await other.stop()
        await failing.stop()
      }
    })

    it("F6: a branch is deleted in the project it was made in, whatever project the connection names now", async () => {
      const made = await api(branches, { body: { name: "moved" } })
      expect(made.status, made.text).toBe(201)
      const put = (project_id: string) =>
        request(gateway.url, "/api/connections/lake", {
          key: admin,
          method: "PUT",
          body: { name: "lake", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: owner, blocked_tables: ["secret.*"], branching: { service: "neon", project_id } }
        })
      expect((await put("proj-elsewhere")).status).toBe(200)
      try {
        expect((await api(`${branches}/moved`, { method: "DELETE" })).status).toBe(200)
        expect(neon.branchNamed(`sluice-${made.json.id}`)).toBeUndefined()
      } finally {
        expect((await put("proj-quiet-sun")).status).toBe(200)
      }
    })

    it("F7: no branch of a branch governed under rules the connection no longer has", async () => {
      expect((await api(branches, { body: { name: "old-rules" } })).status).toBe(201)
      expect((await request(gateway.url, "/api/connections/lake/pii", { key: admin, method: "PUT", body: { rules: [] } })).status).toBe(200)
      try {
        const child = await api(branches, { body: { name: "laundered", parent: "old-rules" } })
        expect([child.status, child.json.code]).toEqual([409, "conflict"])
        expect(child.json.message).toMatch(/rules .* changed/)
      } finally {
        const rules = { rules: [{ table: "analytics.orders", column: "email", action: "mask" }] }
        expect((await request(gateway.url, "/api/connections/lake/pii", { key: admin, method: "PUT", body: rules })).status).toBe(200)
        expect((await api(`${branches}/old-rules`, { method: "DELETE" })).status).toBe(200)
      }
    })

    it("F5: a branch belongs to its connection, not to a name: a new connection of the same name opens none of the old one's", async () => {
      const other = await startInProcess({ SP_NEON_API_URL: neon.url }, { dbtProxy: true })
      try {
        const key = await other.keyWith(["read", "write", "admin", "dbt_proxy"])
        const connection = { name: "lake2", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: owner, password: ownerPassword, branching: { service: "neon", project_id: "proj-quiet-sun", api_key: API_KEY } }
        expect((await request(other.url, "/api/connections", { key, body: connection })).status).toBe(201)
        const route = "/api/connections/lake2/dbbranch/projects/jaffle/branches"
        expect((await request(other.url, route, { key, body: { name: "unblocked" } })).status).toBe(201)
        // The API refuses to delete a connection with branches; one can still go from under them (removed from SP_CONNECTION_*, or from the store).
        expect((await request(other.url, "/api/connections/lake2", { key, method: "DELETE" })).status).toBe(409)
        await other.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`delete from connections where name = 'lake2'`))
        // The same name again, now blocking secret.*, at the same versions as the first.
        expect((await request(other.url, "/api/connections", { key, body: { ...connection, blocked_tables: ["secret.*"] } })).status).toBe(201)
        const minted = await request(other.url, "/api/dbt-proxy/run-tokens", { key, body: { connection_name: "lake2", project: "jaffle", branch: "unblocked", run_id: "r" } })
        expect([minted.status, minted.json.code]).toEqual([409, "conflict"])
        expect((await request(other.url, `${route}/unblocked`, { key, method: "DELETE" })).status).toBe(200)
      } finally {
        await other.stop()
      }
    })
  })
})
