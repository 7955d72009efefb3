import { execFile } from "node:child_process"
import * as net from "node:net"
import { createHmac } from "node:crypto"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CredentialCipher } from "../../layers/CredentialCipher"
import { OrgId, UserId } from "../../src/domain/Ids"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { ApiKeys } from "../../src/services/ApiKeys"
import { DbtRunTokens } from "../../src/services/DbtRunTokens"
import { request, type RequestOptions } from "../support/Http"
import { branchDatabasesOf, localOperator, startInProcess } from "../support/InProcess"
import { createTestDatabase, dropBranchDatabases, postgresAvailable, queryDatabase, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const OTHER_ORG = OrgId.make("org_dbt_other")

const psql = (args: ReadonlyArray<string>, password: string) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile("psql", ["-X", "-v", "ON_ERROR_STOP=1", ...args], { env: { PATH: process.env["PATH"] ?? "/usr/bin", PGPASSWORD: password, PGCONNECT_TIMEOUT: "10" } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    )
  })


describe.skipIf(skip)("the dbt proxy (issue 30)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let database: TestDatabase
  let builder: string
  let writerOnly: string
  let stranger: string
  let branchDb: string

  beforeAll(async () => {
    database = await createTestDatabase()
    await database.query(`create schema raw; create table raw.orders (id int primary key, amount numeric, customer text);
      insert into raw.orders values (1, 10, 'ada'), (2, 20, 'bo'), (3, 30, 'cy')`)
    gateway = await startInProcess({ SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000" }, { dbtProxy: true })
    const admin = await gateway.keyWith(["read", "query", "write", "admin"])
    builder = await gateway.keyWith(["read", "write", "dbt_proxy"])
    writerOnly = await gateway.keyWith(["read", "write"])
    stranger = await gateway.runtime.runPromise(
      Effect.gen(function* () {
        yield* (yield* OrgsRepo).ensureMember({ orgId: OTHER_ORG, orgName: "other", userId: UserId.make("user_x"), role: "admin" })
        return (yield* (yield* ApiKeys).create({ ...localOperator, orgId: OTHER_ORG, userId: UserId.make("user_x") }, { name: "x", scopes: ["read", "write", "dbt_proxy", "admin"] })).key
      }).pipe(Effect.provide(OrgsRepo.Default))
    )
    const connection = { name: "wh", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    const branch = await request(gateway.url, "/api/connections/wh/dbbranch/projects/jaffle/branches", { key: builder, body: { name: "build" } })
    expect(branch.status, branch.text).toBe(201)
    branchDb = branch.json.database
  }, 60_000)
  afterAll(async () => {
    const left = gateway === undefined ? [] : await branchDatabasesOf(gateway)
    await gateway?.stop()
    await dropBranchDatabases(left)
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: builder, ...options })
  const mint = async (body: Record<string, unknown> = {}, key = builder) => {
    const minted = await api("/api/dbt-proxy/run-tokens", { key, body: { connection_name: "wh", project: "jaffle", branch: "build", run_id: "run-1", ...body } })
    return minted
  }
  const auditedUntil = async (done: (rows: ReadonlyArray<Record<string, any>>) => boolean) => {
    for (let tries = 0; ; tries++) {
      const rows = (await api("/api/audit?event_type=dbt_proxy&limit=200")).json.items as ReadonlyArray<Record<string, any>>
      if (done(rows) || tries === 50) return rows
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const connect = async (password: string) => {
    const client = new pg.Client({ host: "127.0.0.1", port: gateway.dbtProxyPort, user: "dbt", database: "anything", password })
    client.on("error", () => undefined)
    await client.connect()
    return client
  }

  it("replays a dbt run's statements into the branch with the pg client, and refuses the rest with the session still usable", async () => {
    const minted = await mint()
    expect(minted.status, minted.text).toBe(201)
    expect(minted.json).toMatchObject({ port: gateway.dbtProxyPort, user: "dbt", dbname: branchDb, run_id: "run-1" })
    const client = await connect(minted.json.token)
    try {
      const who = await client.query("select current_user as role, current_database() as db, current_setting('is_superuser') as su")
      expect(who.rows).toEqual([{ role: branchDb, db: branchDb, su: "off" }])
      // dbt-postgres's table materialization: create as a temporary name, swap by rename, drop the backup.
      for (const sql of [
        'create schema if not exists "dbt_ada"',
        "BEGIN",
        'create table "dbt_ada"."orders" as (select 1 as id)',
        "COMMIT",
        "BEGIN",
        'create table "dbt_ada"."orders__dbt_tmp" as (select id, amount from raw.orders where amount > 15)',
        'alter table "dbt_ada"."orders" rename to "orders__dbt_backup"',
        'alter table "dbt_ada"."orders__dbt_tmp" rename to "orders"',
        "COMMIT",
        'drop table if exists "dbt_ada"."orders__dbt_backup" cascade',
        'create or replace view "dbt_ada"."big_orders" as (select * from "dbt_ada"."orders" where amount > 25)'
      ]) {
        await client.query(sql)
      }
      expect((await client.query("select id from dbt_ada.big_orders")).rows).toEqual([{ id: 3 }])
      // Extended protocol, with parameters.
      expect((await client.query("select $1::int + 1 as n", [41])).rows).toEqual([{ n: 42 }])

      const refusals: ReadonlyArray<readonly [string, RegExp]> = [
        ["copy (select 1) to program 'id'", /COPY to or from a file or program/],
        ["grant select on dbt_ada.orders to public", /GRANT is not allowed/],
        ["set role postgres", /SET role is not allowed/],
        [`create table ${database.name}.public.stolen as select * from raw.orders`, /another database/],
        ["select dblink('dbname=postgres', 'select 1')", /dblink/]
      ]
      for (const [sql, why] of refusals) {
        const error = await client.query(sql).then(() => null, (e: { code?: string; message: string }) => e)
        expect([sql, error?.code]).toEqual([sql, "42501"])
        expect(error?.message).toMatch(why)
        expect(error?.message).toMatch(/^Sluice: /)
      }
      const extended = await client.query("select pg_read_file($1)", ["/etc/passwd"]).then(() => null, (e: { code?: string; message: string }) => e)
      expect(extended?.code).toBe("42501")
      // Inside a transaction a refusal aborts it, as any error would.
      await client.query("BEGIN")
      await expect(client.query("copy raw.orders to '/tmp/x'")).rejects.toThrow(/file or program/)
      await expect(client.query("select 1")).rejects.toThrow(/current transaction is aborted/)
      await client.query("ROLLBACK")
      expect((await client.query("select count(*)::int as n from dbt_ada.orders")).rows).toEqual([{ n: 2 }])
    } finally {
      await client.end()
    }
    // The branch has the model; the connection's own database has nothing new.
    expect(await queryDatabase(branchDb, "select id, amount from dbt_ada.orders order by id")).toEqual([
      { id: 2, amount: "20" },
      { id: 3, amount: "30" }
    ])
    expect(await queryDatabase(database.name, "select table_schema, table_name from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema') order by 1, 2")).toEqual([{ table_schema: "raw", table_name: "orders" }])

    // A session's rows are written together, a few milliseconds after their statements (and at once as it ends).
    const rows = await auditedUntil((found) => found.some((r) => r.outcome === "success" && r.details?.statement === "CREATE TABLE AS" && r.details?.run_id === "run-1" && r.connection === "wh"))
    expect(rows.filter((r) => r.outcome === "refused" && r.block_reason === "statement_refused").length).toBeGreaterThanOrEqual(7)
    expect(JSON.stringify(rows)).not.toContain(minted.json.token)
  })

  it("audits a statement of a session that stays open, within moments, and every statement of a busy one", async () => {
    const client = await connect((await mint({ run_id: "run-open" })).json.token)
    try {
      for (let i = 0; i < 300; i++) await client.query(`select ${i} as busy_${i}`)
      const rows = await auditedUntil((found) => found.filter((r) => r.details?.run_id === "run-open").length >= 200)
      expect(rows.filter((r) => r.details?.run_id === "run-open").length).toBe(200)
      const started = Date.now()
      await client.query("select 'still open' as marker_open")
      const marked = await auditedUntil((found) => found.some((r) => r.sql?.includes("marker_open")))
      expect(marked.some((r) => r.sql?.includes("marker_open"))).toBe(true)
      expect(Date.now() - started).toBeLessThan(3_000)
    } finally {
      await client.end()
    }
  })

  it("psql connects with a run token, and a refused COPY … TO PROGRAM says why", async () => {
    const { token } = (await mint()).json
    const args = ["-h", "127.0.0.1", "-p", String(gateway.dbtProxyPort), "-U", "dbt", "-d", "whatever"]
    const ok = await psql([...args, "-tAc", "select count(*) from raw.orders"], token)
    expect(ok.code, ok.stderr).toBe(0)
    expect(ok.stdout.trim()).toBe("3")
    const refused = await psql([...args, "-c", "COPY raw.orders TO PROGRAM 'cat > /tmp/sluice-pwned'"], token)
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toMatch(/Sluice: COPY to or from a file or program is not allowed/)
  })

  it("cancels the upstream statement on a CancelRequest", async () => {
    const client = await connect((await mint()).json.token)
    try {
      const started = Date.now()
      const running = client.query("select pg_sleep(20)").then(() => null, (e: { code?: string }) => e)
      await new Promise((resolve) => setTimeout(resolve, 300))
      const canceller = new pg.Client({ host: "127.0.0.1", port: gateway.dbtProxyPort }) as unknown as { cancel: (client: pg.Client, query: unknown) => void }
      canceller.cancel(client, (client as unknown as { activeQuery: unknown }).activeQuery)
      expect((await running)?.code).toBe("57014")
      expect(Date.now() - started).toBeLessThan(5_000)
      expect((await client.query("select 1 as one")).rows).toEqual([{ one: 1 }])
    } finally {
      await client.end()
    }
  })

  it("refuses expired, forged and revoked tokens, tokens of other orgs' branches, and minting without dbt_proxy", async () => {
    const refusedWith = (password: string) => connect(password).then(
      (c) => c.end().then(() => "connected"),
      (e: { code?: string }) => e.code
    )
    expect(await refusedWith("sp_not_a_token")).toBe("28P01")
    const { token } = (await mint()).json
    const [payload, mac] = token.slice(4).split(".")
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
    // A forged branch (signature no longer matches).
    const forged = `sdt_${Buffer.from(JSON.stringify({ ...claims, branch: "other" })).toString("base64url")}.${mac}`
    expect(await refusedWith(forged)).toBe("28P01")
    // Properly signed, but expired.
    const secret = await gateway.runtime.runPromise(Effect.map(CredentialCipher, (c) => c.orgSecret("dbt-run-token", claims.org)))
    const expiredPayload = Buffer.from(JSON.stringify({ ...claims, exp: Math.floor(Date.now() / 1000) - 1 })).toString("base64url")
    const expired = `sdt_${expiredPayload}.${createHmac("sha256", secret).update(expiredPayload).digest("base64url")}`
    expect(await refusedWith(expired)).toBe("28P01")
    // The minting key deleted: its tokens open nothing.
    const temporary = await gateway.keyWith(["read", "dbt_proxy"])
    const revokedToken = (await mint({}, temporary)).json.token
    expect(await refusedWith(revokedToken)).toBe("connected")
    const keys = (await api("/api/keys?limit=100", { key: await gateway.keyWith(["admin", "read"]) })).json.items as ReadonlyArray<{ id: string; prefix: string }>
    const temporaryId = keys.find((k) => temporary.startsWith(k.prefix))!.id
    expect((await api(`/api/keys/${temporaryId}`, { method: "DELETE", key: await gateway.keyWith(["admin"]) })).status).toBe(204)
    expect(await refusedWith(revokedToken)).toBe("28P01")

    expect((await mint({}, writerOnly)).status).toBe(403)
    expect((await mint({ ttl_seconds: 30 })).status).toBe(400)
    expect((await mint({}, stranger)).status).toBe(404)
    const audit = (await api("/api/audit?event_type=dbt_proxy_connect&outcome=refused&limit=50")).json.items as ReadonlyArray<Record<string, any>>
    expect(audit.map((r) => r.details?.reason)).toEqual(expect.arrayContaining(["expired", "credential_gone"]))
  })

  it("hands out a dbt profile that points at the proxy with a token, never the connection's password", async () => {
    const profile = await api("/api/connections/wh/dbbranch/dbt-profile?project=jaffle&branch=build&schema=dbt_ada")
    expect(profile.status, profile.text).toBe(200)
    const yaml: string = profile.json.profiles_yml
    expect(yaml).toContain(`port: ${gateway.dbtProxyPort}`)
    expect(yaml).toContain(`dbname: ${branchDb}`)
    expect(yaml).toContain("schema: dbt_ada")
    const token = /password: "(sdt_[^"]+)"/.exec(yaml)?.[1]
    expect(token).toBeDefined()
    const client = await connect(token!)
    expect((await client.query("select current_user as u")).rows).toEqual([{ u: branchDb }])
    await client.end()
    expect((await api("/api/connections/wh/dbbranch/dbt-profile?project=jaffle&branch=build", { key: writerOnly })).status).toBe(403)
  })

  it("MCP: branches and a dbt profile through tools, no secret in any result; readers see only the read tools", async () => {
    const mcp = async (key: string) => {
      const client = new Client({ name: "branches-test", version: "1.0.0" })
      await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gateway.url), { requestInit: { headers: { "x-api-key": key } } }))
      return client
    }
    const text = (result: Awaited<ReturnType<Client["callTool"]>>) => (result.content as Array<{ text: string }>)[0]!.text
    const admin = await mcp(await gateway.keyWith(["read", "write", "admin", "dbt_proxy"]))
    const reader = await mcp(await gateway.keyWith(["read"]))
    try {
      const made = await admin.callTool({ name: "create_branch", arguments: { connection_name: "wh", project: "jaffle", name: "mcp" } })
      expect(made.isError, text(made)).toBeFalsy()
      expect(text(await reader.callTool({ name: "list_branches", arguments: { connection_name: "wh", project: "jaffle" } }))).toMatch(/- mcp \(from main/)
      expect(text(await reader.callTool({ name: "branch_diff", arguments: { connection_name: "wh", project: "jaffle", compare: "mcp" } }))).toMatch(/^main → mcp:/)
      const profile = await admin.callTool({ name: "get_dbt_profile", arguments: { connection_name: "wh", project: "jaffle", branch: "mcp" } })
      expect(text(profile)).toContain("{{ env_var('SLUICE_DBT_TOKEN') }}")
      expect(text(profile)).toContain("/api/dbt-proxy/run-tokens")
      expect(JSON.stringify(profile)).not.toMatch(/sdt_|sp_[0-9a-f]{32}/)
      expect((await reader.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(["list_workspace_projects", "list_branches", "branch_diff", "dbt_models", "dbt_lineage"]))
      expect((await reader.listTools()).tools.map((t) => t.name)).not.toEqual(expect.arrayContaining(["create_branch"]))
      expect((await reader.callTool({ name: "delete_branch", arguments: { connection_name: "wh", project: "jaffle", branch: "mcp" } })).isError).toBe(true)
      expect(text(await admin.callTool({ name: "delete_branch", arguments: { connection_name: "wh", project: "jaffle", branch: "mcp" } }))).toMatch(/deleted/)
      const protectedOne = await admin.callTool({ name: "delete_branch", arguments: { connection_name: "wh", project: "jaffle", branch: "main" } })
      expect(protectedOne.isError).toBe(true)
    } finally {
      await admin.close()
      await reader.close()
    }
  })

  describe("under attack (attack 30)", () => {
    /** A bare protocol client: startup and password, then raw messages; what the server sent back, as frames. */
    const rawSession = async (password: string) => {
      const socket = net.connect(gateway.dbtProxyPort, "127.0.0.1")
      await new Promise((resolve) => socket.once("connect", resolve))
      let received = Buffer.alloc(0)
      socket.on("data", (chunk: Buffer) => (received = Buffer.concat([received, chunk])))
      const frames = () => {
        const out: Array<{ type: string; body: Buffer }> = []
        for (let at = 0; at + 5 <= received.length; ) {
          const length = received.readInt32BE(at + 1)
          if (at + 1 + length > received.length) break
          out.push({ type: String.fromCharCode(received[at]!), body: received.subarray(at + 5, at + 1 + length) })
          at += 1 + length
        }
        return out
      }
      const until = async (type: string) => {
        for (let i = 0; i < 200 && !frames().some((f) => f.type === type); i++) await new Promise((r) => setTimeout(r, 10))
      }
      const message = (type: string, body: Buffer) => {
        const head = Buffer.alloc(5)
        head.write(type, 0, "latin1")
        head.writeInt32BE(body.length + 4, 1)
        return Buffer.concat([head, body])
      }
      const params = Buffer.from("user\0dbt\0database\0x\0\0")
      const startup = Buffer.alloc(8)
      startup.writeInt32BE(8 + params.length, 0)
      startup.writeInt32BE(196608, 4)
      socket.write(Buffer.concat([startup, params]))
      await until("R")
      socket.write(message("p", Buffer.from(`${password}\0`)))
      await until("Z")
      return {
        query: async (sql: Buffer) => {
          received = Buffer.alloc(0)
          socket.write(message("Q", Buffer.concat([sql, Buffer.alloc(1)])))
          await until("Z")
          return frames()
        },
        /** Messages sent as one write, then what came back until a frame of `type` (or 5 s passed). */
        sendAndWait: async (messages: ReadonlyArray<readonly [string, Buffer]>, type: string) => {
          received = Buffer.alloc(0)
          socket.write(Buffer.concat(messages.map(([t, body]) => message(t, body))))
          for (let i = 0; i < 500 && !frames().some((f) => f.type === type); i++) await new Promise((r) => setTimeout(r, 10))
          return frames()
        },
        write: (bytes: Buffer) => new Promise<void>((resolve) => (socket.write(bytes) ? resolve() : socket.once("drain", () => resolve()))),
        /** Messages sent as one write, then what came back until the proxy closed the session (or 5 s passed). */
        sendUntilClosed: async (messages: ReadonlyArray<readonly [string, Buffer]>) => {
          received = Buffer.alloc(0)
          const closed = new Promise<boolean>((resolve) => {
            socket.once("close", () => resolve(true))
            setTimeout(() => resolve(false), 5_000)
          })
          socket.write(Buffer.concat(messages.map(([type, body]) => message(type, body))))
          return { closed: await closed, frames: frames() }
        },
        close: () => socket.destroy()
      }
    }
    const errorsIn = (frames: ReadonlyArray<{ type: string; body: Buffer }>) => frames.filter((f) => f.type === "E").map((f) => f.body.toString("utf8"))

    it("F1: nothing changes how the server reads statement text, and text that is not UTF-8 is refused", async () => {
      const client = await connect((await mint()).json.token)
      try {
        for (const sql of ["set standard_conforming_strings = off", "set client_encoding = 'GBK'", "set names 'SJIS'", "reset standard_conforming_strings"]) {
          const error = await client.query(sql).then(() => null, (e: { code?: string }) => e)
          expect([sql, error?.code]).toEqual([sql, "42501"])
        }
        // With standard strings, the attack's text is one SELECT of two strings: nothing else runs.
        const trick = await client.query("select '\\' , $$' ; create function public.f() returns int language sql as 'select 42' ; -- $$ as x")
        expect(trick.rows).toHaveLength(1)
        expect((await client.query("select count(*)::int as n from pg_proc where proname = 'f'")).rows).toEqual([{ n: 0 }])
      } finally {
        await client.end()
      }
      const raw = await rawSession((await mint()).json.token)
      try {
        const frames = await raw.query(Buffer.concat([Buffer.from("select E'"), Buffer.from([0x81, 0x5c]), Buffer.from("' ; create function public.gbk_f() returns int language sql as $b$select 7$b$ ; -- '")]))
        expect(errorsIn(frames).join()).toMatch(/Sluice: statement text through the dbt proxy is UTF-8/)
        expect(await queryDatabase(branchDb, "select proname from pg_proc where proname in ('f', 'gbk_f')")).toEqual([])
      } finally {
        raw.close()
      }
    })

    it("F2: a branch copied from a branch runs nothing its parent defines as the connection's role", async () => {
      // What a branch's role could have planted in its parent: an operator the ownership hand-over's query would pick up.
      await queryDatabase(branchDb, `create function public.evil(a name, b name) returns boolean language plpgsql as $f$
        begin
          if (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
            execute pg_catalog.format('alter role %I superuser', pg_catalog.current_setting('sluice.branch_role'));
          end if;
          return pg_catalog.textregexne(a::pg_catalog.text, b::pg_catalog.text);
        end $f$;
        create operator public.!~ (leftarg = name, rightarg = name, function = public.evil)`)
      const child = await api("/api/connections/wh/dbbranch/projects/jaffle/branches", { body: { name: "child", parent: "build" } })
      expect(child.status, child.text).toBe(201)
      expect(await queryDatabase("postgres", "select rolname, rolsuper from pg_roles where rolname in ($1, $2) order by 1", [branchDb, child.json.database])).toEqual(
        [
          { rolname: branchDb, rolsuper: false },
          { rolname: child.json.database, rolsuper: false }
        ].sort((a, b) => a.rolname.localeCompare(b.rolname))
      )
      expect((await api("/api/connections/wh/dbbranch/projects/jaffle/branches/child", { method: "DELETE" })).status).toBe(200)
      await queryDatabase(branchDb, "drop operator public.!~ (name, name); drop function public.evil(name, name)")
    })

    it("F3: a branch is a governed copy: blocked relations are not in it, PII columns hold their masked values", async () => {
      const admin = await gateway.keyWith(["read", "query", "write", "admin"])
      await database.query(`create schema if not exists secret; create table secret.salaries (name text, salary int); insert into secret.salaries values ('ceo', 999999);
        create table public.customers (id int primary key, email text not null, ssn bigint, phone text); insert into public.customers values (1, 'ada.lovelace@example.org', 123456789, '555-0100');
        create view public.salary_view as select * from secret.salaries`)
      const connection = { name: "gov", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root", blocked_tables: ["secret.*"] }
      expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
      const rules = { rules: [{ table: "customers", column: "email", action: "mask" }, { table: "public.customers", column: "ssn", action: "hash" }, { table: "customers", column: "phone", action: "drop" }] }
      expect((await request(gateway.url, "/api/connections/gov/pii", { key: admin, method: "PUT", body: rules })).status).toBe(200)
      const made = await api("/api/connections/gov/dbbranch/projects/jaffle/branches", { body: { name: "governed" } })
      expect(made.status, made.text).toBe(201)
      expect(made.json.governance).toEqual({ dropped: ["secret.salaries"], masked: ["public.customers"], policy: expect.stringMatching(/^.+:\d+:\d+$/) })
      const token = (await mint({ connection_name: "gov", branch: "governed" })).json.token
      const client = await connect(token)
      try {
        await expect(client.query("select * from secret.salaries")).rejects.toThrow(/does not exist/)
        await expect(client.query("select * from public.salary_view")).rejects.toThrow(/does not exist/)
        const [row] = (await client.query("select email, ssn, phone from public.customers")).rows
        expect(row).toEqual({ email: "****.org", ssn: expect.stringMatching(/^[0-9a-f]{64}$/), phone: null })
        // Hashed as governed queries hash it: joins between the branch and governed results still line up.
        const governed = await request(gateway.url, "/api/query", { key: admin, body: { connection_name: "gov", sql: "select ssn from public.customers" } })
        expect(governed.json.rows[0][0]).toBe(row.ssn)
      } finally {
        await client.end()
      }
      // The copy holds nothing else of it either.
      const copy = made.json.database as string
      expect(await queryDatabase(copy, "select count(*)::int as n from pg_class where relname = 'salaries'")).toEqual([{ n: 0 }])
      expect(JSON.stringify(await queryDatabase(copy, "select * from public.customers"))).not.toMatch(/ada\.lovelace|123456789|555-0100/)
      expect((await api("/api/connections/gov/dbbranch/projects/jaffle/branches/governed", { method: "DELETE" })).status).toBe(200)
    })

    it("F4: a client that has not logged in holds little: an oversized startup or password message ends it", async () => {
      const closedAfter = async (bytes: ReadonlyArray<Buffer>) => {
        const socket = net.connect(gateway.dbtProxyPort, "127.0.0.1")
        socket.on("error", () => undefined)
        await new Promise((resolve) => socket.once("connect", resolve))
        const closed = new Promise<boolean>((resolve) => {
          socket.once("close", () => resolve(true))
          setTimeout(() => resolve(false), 3_000)
        })
        for (const chunk of bytes) socket.write(chunk)
        const result = await closed
        socket.destroy()
        return result
      }
      const huge = Buffer.alloc(8)
      huge.writeInt32BE(0x7fffffff, 0)
      huge.writeInt32BE(196608, 4)
      expect(await closedAfter([huge, Buffer.alloc(1024 * 1024, 0x41)])).toBe(true)
      const params = Buffer.from("user\0dbt\0\0")
      const startup = Buffer.alloc(8)
      startup.writeInt32BE(8 + params.length, 0)
      startup.writeInt32BE(196608, 4)
      const password = Buffer.alloc(5)
      password.write("p", 0, "latin1")
      password.writeInt32BE(0x7ffffff0, 1)
      expect(await closedAfter([Buffer.concat([startup, params]), password, Buffer.alloc(1024 * 1024, 0x41)])).toBe(true)
    })

    it("F6: local access mints no run tokens (nothing would revoke them)", async () => {
      const minted = await gateway.runtime.runPromise(
        Effect.either(Effect.flatMap(DbtRunTokens, (tokens) => tokens.mint(localOperator, { connection_name: "wh", project: "jaffle", branch: "build", run_id: "r", ttl_seconds: 3600 }, "localhost")))
      )
      expect(minted._tag === "Left" && minted.left._tag).toBe("Forbidden")
    })

    it("A32-F1: a setting one message changes is seen before the next is read: nothing sent after it runs, simple or extended protocol", async () => {
      // A view over pg_settings, as a copy of the customer's database may hold, owned by the branch's role: an UPDATE through it sets settings.
      await queryDatabase(branchDb, `create view public.settings_v32 as select * from pg_settings; alter view public.settings_v32 owner to "${branchDb}"`)
      const text = (sql: string) => Buffer.from(`${sql}\0`)
      const off = "update public.settings_v32 set setting = 'off' where name = 'standard_conforming_strings'"
      const on = "update public.settings_v32 set setting = 'on' where name = 'standard_conforming_strings'"
      // With standard strings, two constants; without, a constant and then CREATE FUNCTION.
      const payload = "select 'a\\' || '; create function public.pwn32() returns int language sql as $$select 42$$; select 1 --'"
      const created = () => queryDatabase(branchDb, "select count(*)::int as n from pg_proc where proname = 'pwn32'")
      try {
        const simple = await rawSession((await mint()).json.token)
        const pipelined = await simple.sendUntilClosed([["Q", text(off)], ["Q", text(payload)]])
        expect(pipelined.closed).toBe(true)
        expect(errorsIn(pipelined.frames).join()).toMatch(/changed how the server reads statement text/)
        expect(await created()).toEqual([{ n: 0 }])

        const extended = await rawSession((await mint()).json.token)
        const statement = (sql: string): ReadonlyArray<readonly [string, Buffer]> => [
          ["P", Buffer.concat([text(""), text(sql), Buffer.alloc(2)])],
          ["B", Buffer.concat([text(""), text(""), Buffer.alloc(6)])],
          ["E", Buffer.concat([text(""), Buffer.alloc(4)])]
        ]
        const batch = await extended.sendUntilClosed([...statement(off), ...statement(payload), ...statement(on), ["S", Buffer.alloc(0)]])
        expect(batch.closed).toBe(true)
        expect(errorsIn(batch.frames).join()).toMatch(/statement text after an Execute/)
        expect(await created()).toEqual([{ n: 0 }])
        expect(await queryDatabase(branchDb, "select count(*)::int as n from pg_stat_activity where application_name = 'smuggled'")).toEqual([{ n: 0 }])
      } finally {
        await queryDatabase(branchDb, "drop view if exists public.settings_v32; drop function if exists public.pwn32()")
      }
    })

    it("A33-F2, F3: COPY FROM STDIN over the extended protocol completes; a Query inside an extended batch ends the session rather than hanging it", async () => {
      await queryDatabase(branchDb, `create table public.copy33 (id int); alter table public.copy33 owner to "${branchDb}"`)
      const text = (sql: string) => Buffer.from(`${sql}\0`)
      const statement = (sql: string): ReadonlyArray<readonly [string, Buffer]> => [
        ["P", Buffer.concat([text(""), text(sql), Buffer.alloc(2)])],
        ["B", Buffer.concat([text(""), text(""), Buffer.alloc(6)])],
        ["E", Buffer.concat([text(""), Buffer.alloc(4)])]
      ]
      const sessions: Array<{ close: () => void }> = []
      try {
        // As libpq's PQexecParams sends it: the batch and its Sync, then, once the server asks for it, the data, CopyDone and a Sync.
        const copy = await rawSession((await mint()).json.token)
        sessions.push(copy)
        const asked = await copy.sendAndWait([...statement("copy public.copy33 from stdin"), ["S", Buffer.alloc(0)]], "G")
        expect(asked.map((f) => f.type)).toContain("G")
        const done = await copy.sendAndWait([["d", Buffer.from("1\n2\n")], ["c", Buffer.alloc(0)], ["S", Buffer.alloc(0)]], "Z")
        expect(done.map((f) => f.type)).toEqual(expect.arrayContaining(["C", "Z"]))
        expect(await queryDatabase(branchDb, "select count(*)::int as n from public.copy33")).toEqual([{ n: 2 }])
        copy.close()

        const mixed = await rawSession((await mint()).json.token)
        sessions.push(mixed)
        const ended = await mixed.sendUntilClosed([["P", Buffer.concat([text(""), text("selec broken"), Buffer.alloc(2)])], ["Q", text("select 1")], ["S", Buffer.alloc(0)]])
        expect(ended.closed).toBe(true)
        expect(errorsIn(ended.frames).join()).toMatch(/Query inside an extended-protocol batch/)
      } finally {
        for (const session of sessions) session.close()
        await queryDatabase(branchDb, "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and query like 'copy public.copy33%'")
        await queryDatabase(branchDb, "drop table if exists public.copy33")
      }
    })

    it("A33-F1: a large message arriving in many pieces is joined once, not again with every piece", async () => {
      const raw = await rawSession((await mint()).json.token)
      await queryDatabase(branchDb, `create table public.bulk33 (line text); alter table public.bulk33 owner to "${branchDb}"`)
      try {
        const asked = await raw.sendAndWait([["Q", Buffer.from("copy public.bulk33 from stdin\0")]], "G")
        expect(asked.map((f) => f.type)).toContain("G")
        // One 15 MiB CopyData message, written 16 KiB at a time: copied again with every piece, that is gigabytes of copying (3 s of CPU here).
        // Counted in this process's CPU time (the proxy runs in it; the server's COPY does not), which a busy machine does not stretch as it does the wall clock.
        const line = Buffer.alloc(15 * 1024 * 1024, "x")
        line[line.length - 1] = 0x0a
        const head = Buffer.alloc(5)
        head.write("d", 0, "latin1")
        head.writeInt32BE(line.length + 4, 1)
        const message = Buffer.concat([head, line])
        const started = process.cpuUsage()
        for (let at = 0; at < message.length; at += 16 * 1024) await raw.write(message.subarray(at, at + 16 * 1024))
        const done = await raw.sendAndWait([["c", Buffer.alloc(0)]], "Z")
        expect(done.map((f) => f.type)).toEqual(expect.arrayContaining(["C", "Z"]))
        const cpu = process.cpuUsage(started)
        expect((cpu.user + cpu.system) / 1000).toBeLessThan(1_500)
      } finally {
        raw.close()
        await queryDatabase(branchDb, "drop table if exists public.bulk33")
      }
    })

    it("A32-F1: pipelined statements that change nothing still run in order, each classified", async () => {
      const raw = await rawSession((await mint()).json.token)
      try {
        const answered = await raw.query(Buffer.from("select 1 as one; select 2 as two"))
        expect(answered.filter((f) => f.type === "D")).toHaveLength(2)
      } finally {
        raw.close()
      }
      const client = await connect((await mint()).json.token)
      try {
        // pg sends Parse/Bind/Execute/Sync per query; queued queries go out as the answers come back.
        const all = await Promise.all([1, 2, 3, 4, 5].map((n) => client.query(`select ${n}::int as n`)))
        expect(all.map((r) => r.rows[0].n)).toEqual([1, 2, 3, 4, 5])
        const refused = await Promise.all([client.query("select pg_read_file('/etc/passwd')").then(() => "ran", (e: { code?: string }) => e.code), client.query("select 6::int as n")])
        expect(refused[0]).toBe("42501")
        expect(refused[1].rows[0].n).toBe(6)
      } finally {
        await client.end()
      }
    })
  })

  describe("under attack, round 2 (attack 30)", () => {
    it("N1: no write reaches the system catalogs (UPDATE pg_settings would set standard_conforming_strings)", async () => {
      const client = await connect((await mint()).json.token)
      try {
        for (const sql of ["update pg_settings set setting = 'off' where name = 'standard_conforming_strings'", "with x as (update pg_catalog.pg_settings set setting = 'off' where name = 'standard_conforming_strings' returning 1) select * from x"]) {
          const error = await client.query(sql).then(() => null, (e: { code?: string; message: string }) => e)
          expect([sql, error?.code, error?.message]).toEqual([sql, "42501", expect.stringMatching(/system catalogs/)])
        }
        expect((await client.query("show standard_conforming_strings")).rows).toEqual([{ standard_conforming_strings: "on" }])
      } finally {
        await client.end()
      }
    })

    it("N2, N3: masking holds against the copy's triggers, rules and forced row security, and no statistic keeps a raw value", async () => {
      const admin = await gateway.keyWith(["read", "query", "write", "admin"])
      const main = await createTestDatabase()
      try {
        await main.query(`create table public.audited (id int, email text); insert into public.audited select g, 'user' || g || '@private.example' from generate_series(1, 50) g;
          create table public.history (old_row jsonb);
          create function public.keep_history() returns trigger language plpgsql as $f$ begin insert into public.history values (to_jsonb(old)); return new; end $f$;
          create trigger keep before update on public.audited for each row execute function public.keep_history();
          create view public.audited_emails as select email from public.audited;
          create table public.ruled (id int, email text); insert into public.ruled select g, 'ruled' || g || '@private.example' from generate_series(1, 50) g;
          create rule keep as on update to public.ruled do instead nothing;
          create table public.guarded (id int, tenant int, email text); insert into public.guarded select g, g % 3, 'guarded' || g || '@private.example' from generate_series(1, 30) g;
          alter table public.guarded enable row level security; alter table public.guarded force row level security;
          create policy tenant_one on public.guarded using (tenant = 1);
          analyze`)
        const connection = { name: "gov2", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: main.name, username: "root" }
        expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
        const rules = { rules: ["audited", "ruled", "guarded"].map((table) => ({ table, column: "email", action: "mask" })) }
        expect((await request(gateway.url, "/api/connections/gov2/pii", { key: admin, method: "PUT", body: rules })).status).toBe(200)
        const made = await api("/api/connections/gov2/dbbranch/projects/jaffle/branches", { body: { name: "masked" } })
        expect(made.status, made.text).toBe(201)
        expect([...made.json.governance.masked].sort()).toEqual(["public.audited", "public.guarded", "public.ruled"])
        const client = await connect((await mint({ connection_name: "gov2", branch: "masked" })).json.token)
        try {
          await client.query("alter table public.guarded no force row level security")
          const everything = await client.query("select (select json_agg(a) from public.audited a) as audited, (select json_agg(r) from public.ruled r) as ruled, (select json_agg(g) from public.guarded g) as guarded, (select json_agg(h) from public.history h) as history, (select json_agg(v) from public.audited_emails v) as view")
          const seen = JSON.stringify(everything.rows)
          expect(seen).not.toMatch(/@private\.example/)
          expect(everything.rows[0].history).toBeNull()
          expect(everything.rows[0].guarded).toHaveLength(30)
          const stats = await client.query("select json_agg(s) as all from pg_stats s where schemaname = 'public'")
          expect(JSON.stringify(stats.rows)).not.toMatch(/private\.example/)
        } finally {
          await client.end()
        }
        expect((await api("/api/connections/gov2/dbbranch/projects/jaffle/branches/masked", { method: "DELETE" })).status).toBe(200)
        expect((await request(gateway.url, "/api/connections/gov2", { key: admin, method: "DELETE" })).status).toBeLessThan(300)
      } finally {
        await main.drop()
      }
    })

    it("N4, N7: a branch governed under rules the connection no longer has opens no session; a token is for its branch, not a name", async () => {
      const admin = await gateway.keyWith(["read", "query", "write", "admin"])
      expect((await api("/api/connections/wh/dbbranch/projects/jaffle/branches", { body: { name: "rules" } })).status).toBe(201)
      const before = (await mint({ branch: "rules" })).json.token
      expect((await request(gateway.url, "/api/connections/wh/pii", { key: admin, method: "PUT", body: { rules: [{ table: "raw.orders", column: "customer", action: "redact" }] } })).status).toBe(200)
      const refused = await connect(before).then(
        (c) => c.query("select 1").then(() => "answered", (e: Error) => e.message),
        (e: Error) => e.message
      )
      expect(refused).toMatch(/rules .* changed since the branch rules was made/)
      const minted = await mint({ branch: "rules" })
      expect([minted.status, minted.json.code]).toEqual([409, "conflict"])
      expect((await api("/api/connections/wh/dbbranch/projects/jaffle/branches/rules", { method: "DELETE" })).status).toBe(200)
      expect((await request(gateway.url, "/api/connections/wh/pii", { key: admin, method: "PUT", body: { rules: [] } })).status).toBe(200)

      // The same name made again is another branch: the first one's token does not open it.
      expect((await api("/api/connections/wh/dbbranch/projects/jaffle/branches", { body: { name: "again" } })).status).toBe(201)
      const first = (await mint({ branch: "again" })).json.token
      expect((await api("/api/connections/wh/dbbranch/projects/jaffle/branches/again", { method: "DELETE" })).status).toBe(200)
      expect((await api("/api/connections/wh/dbbranch/projects/jaffle/branches", { body: { name: "again" } })).status).toBe(201)
      const reused = await connect(first).then(
        (c) => c.query("select 1").then(() => "answered", (e: Error) => e.message),
        (e: Error) => e.message
      )
      expect(reused).toMatch(/earlier branch of that name/)
      expect((await api("/api/connections/wh/dbbranch/projects/jaffle/branches/again", { method: "DELETE" })).status).toBe(200)
    })
  })
})
