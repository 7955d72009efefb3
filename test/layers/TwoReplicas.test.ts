import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { migrations } from "../../src/migrations"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type GatewayProcess, runCli, startGateway } from "../support/Gateway"
import { request } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const LEASE_TTL_SECONDS = 3
const CLOUD = {
  SP_DEPLOYMENT_MODE: "cloud",
  SP_AUDIT_RETENTION_DAYS: "30",
  SP_LEASE_TTL_SECONDS: String(LEASE_TTL_SECONDS)
}

interface LeaseRow {
  readonly name: string
  readonly holder: string
  readonly acquired_at: Date
  readonly expires_at: Date
}

/** Holder is `<hostname>:<pid>:<random>`; read the pid from the end in case the hostname has colons. */
const holderPid = (holder: string) => Number(holder.split(":").at(-2))

const waitFor = async <A>(what: string, timeoutMs: number, probe: () => Promise<A | undefined>): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (true) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(100)
  }
}

describe.skipIf(!hasPostgres)("two cloud replicas on one PostgreSQL", () => {
  let database: TestDatabase
  let gateways: Array<GatewayProcess> = []

  const leases = () => database.query<LeaseRow>(`select name, holder, acquired_at, expires_at from leases where name = 'audit-retention'`)

  beforeAll(async () => {
    database = await createTestDatabase()
  })
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()))
    await database?.drop()
  })

  it("start together: both become healthy and every migration runs exactly once", async () => {
    gateways = await Promise.all([
      startGateway({ databaseUrl: database.url, env: CLOUD }),
      startGateway({ databaseUrl: database.url, env: CLOUD })
    ])
    for (const g of gateways) {
      const health = await request(g.url, "/health")
      expect([health.status, health.json]).toEqual([200, { status: "healthy" }])
    }
    const rows = await database.query<{ migration_id: number; name: string }>(
      `select migration_id, name from effect_sql_migrations order by migration_id`
    )
    expect(rows.map((r) => r.migration_id)).toEqual(Object.keys(migrations).map((_, i) => i + 1))
    expect(rows.map((r) => r.name)).toEqual(Object.keys(migrations).map((id) => id.replace(/^\d+_/, "")))
  })

  it("audit-retention runs under one lease holder, which renews it and hands over when killed", async () => {
    expect(gateways).toHaveLength(2)
    const pids = gateways.map((g) => g.process.pid!)

    const first = await waitFor("the audit-retention lease", 5_000, async () => {
      const rows = await leases()
      return rows.length > 0 ? rows : undefined
    })
    expect(first.map((r) => r.name)).toEqual(["audit-retention"])
    const holder = first[0]!.holder
    expect(holder).toMatch(new RegExp(`^${os.hostname().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:\\d+:[0-9a-f]{8}$`))
    expect(pids).toContain(holderPid(holder))

    // Something the loop does: an audit row older than the 30-day retention. The holder already ran
    // its start-up prune (hourly after that), so this row stays until the next holder starts the loop.
    await sleep(500)
    await database.query(
      `insert into gateway_audit_logs ("timestamp", org_id, event_type, route, outcome, duration_ms, request_id)
       values ($1, null, 'api', '/x', 'success', 1, 'old')`,
      [Math.floor(Date.now() / 1000) - 40 * 86_400]
    )

    // Renewals every ttl/3 = 1 s: same holder, same acquired_at, expires_at moving forward.
    const expirations = new Set<number>()
    const watchUntil = Date.now() + 4_000
    while (Date.now() < watchUntil) {
      const rows = await leases()
      expect(rows).toHaveLength(1)
      expect(rows[0]!.holder).toBe(holder)
      expect(rows[0]!.acquired_at.getTime()).toBe(first[0]!.acquired_at.getTime())
      expirations.add(rows[0]!.expires_at.getTime())
      await sleep(250)
    }
    const seen = [...expirations].sort((a, b) => a - b)
    expect(seen.length).toBeGreaterThanOrEqual(3)
    expect(seen.at(-1)!).toBeGreaterThan(first[0]!.expires_at.getTime())
    expect(await database.query(`select request_id from gateway_audit_logs where request_id = 'old'`)).toHaveLength(1)

    const victim = gateways.find((g) => g.process.pid === holderPid(holder))!
    const survivor = gateways.find((g) => g !== victim)!
    const killedAt = Date.now()
    await victim.kill()
    gateways = [survivor]

    const takeover = await waitFor("the survivor to take the lease", 10_000, async () => {
      const rows = await leases()
      return rows.length === 1 && holderPid(rows[0]!.holder) === survivor.process.pid ? rows[0]! : undefined
    })
    const elapsed = Date.now() - killedAt
    // ttl (3 s) + one renew interval (1 s) + slack
    expect(elapsed).toBeLessThanOrEqual(6_000)
    expect(takeover.holder).not.toBe(holder)
    expect(takeover.acquired_at.getTime()).toBeGreaterThan(first[0]!.acquired_at.getTime())

    // The new holder's loop prunes on start.
    await waitFor("the old audit row to be pruned", 5_000, async () => {
      const rows = await database.query(`select 1 from gateway_audit_logs where request_id = 'old'`)
      return rows.length === 0 ? true : undefined
    })
    expect((await request(survivor.url, "/health")).status).toBe(200)

    // A graceful stop gives the lease back instead of leaving it to expire.
    await survivor.stop()
    gateways = []
    expect(survivor.process.exitCode, survivor.logs()).toBe(0)
    // Every lease it held, not only audit-retention; the killed replica's other leases stay until someone takes them.
    const held = await database.query<{ name: string; holder: string }>(`select name, holder from leases`)
    expect(held.filter((lease) => holderPid(lease.holder) === survivor.process.pid), "every lease it held is given back").toEqual([])
  })
})

describe.skipIf(!hasPostgres)("an API key across two replicas", () => {
  let database: TestDatabase
  let gateways: Array<GatewayProcess> = []
  const dataDirs: Array<string> = []
  const tempDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-cli-"))
    dataDirs.push(dir)
    return dir
  }

  beforeAll(async () => {
    database = await createTestDatabase()
  })
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()))
    await database?.drop()
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true })
  })

  // A CLI run and two gateways started on a busy two-core box (CI runs two test files at once) can take most of a minute.
  it("a key made by the CLI works on both; deleted on A it is refused at once on A and within 1 s on B", { timeout: 150_000 }, async () => {
    const env = { SP_DEPLOYMENT_MODE: "cloud", DATABASE_URL: database.url, SP_DATA_DIR: tempDir() }
    const created = await runCli(["keys", "create", "--name", "k1", "--scopes", "read,admin", "--org", "acme"], env)
    expect(created.code, created.stderr).toBe(0)
    const key = created.stdout.trim()
    expect(key).toMatch(/^sp_[0-9a-f]{32}$/)

    // The CLI migrated the store; an audit row two days old must survive cloud replicas that have
    // no SP_AUDIT_RETENTION_DAYS (README: unset means no pruning). Checked in the next test.
    await database.query(
      `insert into gateway_audit_logs ("timestamp", org_id, event_type, route, outcome, duration_ms, request_id)
       values ($1, null, 'api', '/x', 'success', 1, 'two-days-old')`,
      [Math.floor(Date.now() / 1000) - 2 * 86_400]
    )

    gateways = await Promise.all([
      startGateway({ databaseUrl: database.url, env: { SP_DEPLOYMENT_MODE: "cloud" } }),
      startGateway({ databaseUrl: database.url, env: { SP_DEPLOYMENT_MODE: "cloud" } })
    ])
    const [a, b] = gateways as [GatewayProcess, GatewayProcess]

    expect((await request(a.url, "/api/plan", { key })).status).toBe(200)
    expect((await request(b.url, "/api/plan", { key })).status).toBe(200)

    const listed = await request(a.url, "/api/keys", { key })
    expect(listed.status).toBe(200)
    const entry = listed.json.items.find((k: { name: string }) => k.name === "k1")
    expect(entry).toMatchObject({ name: "k1", organization: "acme", prefix: key.slice(0, 11) })

    // B has just verified the key, so it sits in B's sub-second key cache when A deletes it.
    expect((await request(b.url, "/api/plan", { key })).status).toBe(200)
    const deleted = await request(a.url, `/api/keys/${entry.id}`, { key, method: "DELETE" })
    const deletedAt = Date.now()
    expect(deleted.status).toBe(204)

    const onA = await request(a.url, "/api/plan", { key })
    expect([onA.status, onA.json?.code]).toEqual([401, "invalid_api_key"])
    let onB = await request(b.url, "/api/plan", { key })
    while (onB.status === 200 && Date.now() - deletedAt < 2_000) {
      await sleep(50)
      onB = await request(b.url, "/api/plan", { key })
    }
    expect([onB.status, onB.json?.code]).toEqual([401, "invalid_api_key"])
    expect(Date.now() - deletedAt).toBeLessThan(1_000)
  })

  it("without SP_AUDIT_RETENTION_DAYS cloud replicas take no retention lease and prune nothing", async () => {
    expect(gateways).toHaveLength(2)
    await sleep(1_500)
    const kept = await database.query(`select request_id from gateway_audit_logs where request_id = 'two-days-old'`)
    expect(kept, "an audit row two days old was pruned although SP_AUDIT_RETENTION_DAYS is unset").toHaveLength(1)
    expect(await database.query(`select name, holder from leases where name = 'audit-retention'`)).toEqual([])
  })
})
