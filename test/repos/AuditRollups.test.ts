import { afterAll, describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Cause, ConfigProvider, Effect, Exit, Layer } from "effect"
import pg from "pg"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { OrgId } from "../../src/domain/Ids"
import { AuditRepo } from "../../src/repos/AuditRepo"
import { tenantScope } from "../../src/repos/Tenant"
import { type Query, rawAuditStats, seedAuditRows } from "../support/AuditRows"
import { tempDataDir } from "../support/Gateway"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const database = hasPostgres ? await createTestDatabase() : undefined
afterAll(() => database?.drop())

const storeOn = (env: Record<string, string>) =>
  AuditRepo.Default.pipe(
    Layer.provideMerge(StoreLive),
    Layer.provide(AppConfig.Default),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )

const HOUR = 3600
const A = OrgId.make("org_rollup_a")
const B = OrgId.make("org_rollup_b")
// Fixed times, so the data and the windows are the same on every run: the log spans ten days before NOW.
const NOW = 1_800_000_000 + 1_234
const WINDOWS = [NOW - HOUR, NOW - 24 * HOUR, NOW - 24 * HOUR - 1_234, NOW - 7 * 24 * HOUR + 17, NOW - 90 * 24 * HOUR, NOW + 300]

const stores = [
  { name: "embedded", env: { SP_DATA_DIR: tempDataDir() }, skip: false },
  { name: "postgresql", env: { DATABASE_URL: database?.url ?? "" }, skip: !hasPostgres }
]

for (const store of stores) {
  describe.skipIf(store.skip)(`audit stats from hourly rollups on the ${store.name} store`, () => {
    layer(storeOn(store.env), { timeout: 120_000, excludeTestServices: true })((it) => {
      const setup = Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* AuditRepo
        const query: Query = (text, params) => Effect.runPromise(sql.unsafe(text, params))
        /** Stats for every window, from the repo and from the rows, equal; no rollup row is left at zero. */
        const expectExact = (label: string) =>
          Effect.gen(function* () {
            for (const org of [A, B]) {
              for (const since of WINDOWS) {
                const s = yield* repo.stats(org, since)
                const fromRollups = { since, ...s.totals, hourly: s.hourly, top_keys: s.topKeys, block_reasons: s.blockReasons }
                const fromRows = yield* Effect.promise(() => rawAuditStats(query, org, since))
                expect(fromRollups, `${label}: ${org} since ${since}`).toEqual(fromRows)
              }
            }
            const zeros = yield* sql<{ n: number }>`select
                (select count(*) from gateway_audit_hourly where success = 0 and refused = 0 and error = 0)
              + (select count(*) from gateway_audit_hourly_keys where requests = 0)
              + (select count(*) from gateway_audit_hourly_block_reasons where count = 0) as n`
            expect(Number(zeros[0]!.n), label).toBe(0)
          })
        return { sql, repo, query, expectExact }
      })

      it.effect("stay exact through batch inserts, a tenant's own insert, updates, retention and truncation", () =>
        Effect.gen(function* () {
          const { sql, repo, query, expectExact } = yield* setup
          yield* Effect.promise(async () => {
            await seedAuditRows(query, A, 20_000, NOW - 10 * 24 * HOUR, NOW + 600, "a")
            await seedAuditRows(query, B, 3_000, NOW - 3 * 24 * HOUR, NOW, "b")
            await seedAuditRows(query, null, 500, NOW - 3 * 24 * HOUR, NOW, "none")
          })
          yield* expectExact("seeded, not folded yet")
          expect(yield* repo.fold()).toBe(23_000)
          expect(yield* repo.fold()).toBe(0)
          yield* expectExact("seeded, folded")

          // The audit writer's batch path, a few rows straddling an hour boundary.
          const row = (timestamp: number, outcome: "success" | "refused" | "error", key: string | null, reason: string | null) => ({
            timestamp, org_id: A, principal: key === null ? null : `key:${key}`, key_id: key, user_id: null, event_type: "api",
            method: "GET", route: "/api/plan", status: 200, connection: null, sql: null, outcome, block_reason: reason,
            rows: null, duration_ms: 1, client_ip: null, user_agent: null, request_id: `batch-${timestamp}`, details: null
          })
          const boundary = Math.floor(NOW / HOUR) * HOUR - 24 * HOUR
          yield* repo.insertBatch([row(boundary - 1, "refused", "key_new", "rate_limited"), row(boundary, "error", "key_new", null), row(boundary + 1, "success", null, null)])
          yield* expectExact("batch")

          // A request's own transaction writes its row as the tenant role (which may insert audit rows but not rollups).
          yield* sql`grant insert on gateway_audit_logs to sluice_tenant`
          yield* sql`grant usage on sequence gateway_audit_logs_id_seq to sluice_tenant`
          yield* tenantScope(sql)(A)(
            sql`insert into gateway_audit_logs ("timestamp", org_id, principal, key_id, event_type, route, outcome, block_reason, duration_ms, request_id)
                values (${NOW - 100}, ${A}, 'key:sp_t', 'key_tenant', 'api', '/api/keys', 'refused', 'query_blocked', 1, 'tenant-own')`
          )
          const foreign = yield* tenantScope(sql)(A)(
            sql`insert into gateway_audit_logs ("timestamp", org_id, event_type, route, outcome, duration_ms, request_id)
                values (${NOW}, ${B}, 'api', '/x', 'success', 1, 'foreign')`
          ).pipe(Effect.flip)
          expect(foreign._tag).toBe("SqlError")
          yield* expectExact("tenant insert")
          yield* repo.fold()
          yield* expectExact("tenant insert, folded")

          // A row completed after its request answered; rows moved across hours, keys, reasons and orgs.
          yield* sql`update gateway_audit_logs set status = 201, duration_ms = 3 where request_id = 'tenant-own'`
          yield* sql`update gateway_audit_logs set outcome = 'success', block_reason = null where request_id = 'tenant-own'`
          yield* sql`update gateway_audit_logs set "timestamp" = "timestamp" - 5000, key_id = 'key_moved', principal = null
                     where org_id = ${A} and id % 11 = 0`
          yield* sql`update gateway_audit_logs set org_id = ${B}, block_reason = 'moved' where org_id = ${A} and id % 13 = 0`
          yield* sql`update gateway_audit_logs set org_id = null where org_id = ${B} and id % 7 = 0`
          yield* expectExact("updates")
          yield* repo.fold()
          yield* expectExact("updates, folded")
          // Rows moved before they were folded, then folded.
          yield* Effect.promise(() => seedAuditRows(query, A, 900, NOW - 6 * 24 * HOUR, NOW, "late"))
          yield* sql`update gateway_audit_logs set org_id = ${B}, "timestamp" = "timestamp" - 7200 where request_id like 'late-%' and id % 3 = 0`
          yield* expectExact("late rows moved")
          yield* repo.fold()
          yield* expectExact("late rows moved, folded")

          // Retention deletes in batches, up to a time in the middle of an hour; some of its rows are not folded yet.
          yield* Effect.promise(() => seedAuditRows(query, A, 700, NOW - 9 * 24 * HOUR, NOW - 4 * 24 * HOUR, "unfolded-old"))
          const before = NOW - 5 * 24 * HOUR - 1_000
          while ((yield* repo.pruneBefore(before, 3_000)) > 0) {
            yield* expectExact("retention batch")
          }
          const old = yield* sql<{ n: number }>`select count(*)::int as n from gateway_audit_hourly where hour < ${Math.floor(before / HOUR) * HOUR}`
          expect(old[0]!.n).toBe(0)
          yield* expectExact("retention")
          yield* repo.fold()
          yield* expectExact("retention, folded")

          yield* sql`delete from gateway_audit_logs where org_id = ${B}`
          yield* expectExact("org deleted")
          yield* sql`truncate gateway_audit_logs`
          const left = yield* sql<{ n: number }>`select (select count(*) from gateway_audit_hourly) + (select count(*) from gateway_audit_hourly_keys)
              + (select count(*) from gateway_audit_hourly_block_reasons) as n`
          expect(Number(left[0]!.n)).toBe(0)
          yield* expectExact("truncated")
        })
      )

      it.effect.skipIf(store.name !== "postgresql")("a fold skips no row of a transaction still open, and a delete beside a fold counts each row once", () =>
        Effect.gen(function* () {
          const { sql, repo, query, expectExact } = yield* setup
          const other = new pg.Client({ connectionString: database!.url })
          yield* Effect.promise(() => other.connect())
          yield* Effect.addFinalizer(() => Effect.promise(() => other.end()))
          yield* Effect.promise(() => seedAuditRows(query, A, 2_000, NOW - 2 * 24 * HOUR, NOW, "open"))
          yield* repo.fold()

          // Its row has an older txid than rows committed and folded before it commits.
          yield* Effect.promise(async () => {
            await other.query("begin")
            await other.query(`insert into gateway_audit_logs ("timestamp", org_id, key_id, principal, event_type, route, outcome, duration_ms, request_id)
              values ($1, $2, 'key_late', 'key:sp_late', 'api', '/x', 'success', 1, 'late-commit')`, [NOW - 3 * HOUR, A])
          })
          yield* Effect.promise(() => seedAuditRows(query, A, 300, NOW - 2 * 24 * HOUR, NOW, "after"))
          yield* repo.fold()
          yield* Effect.promise(() => other.query("commit"))
          yield* expectExact("a late commit, not folded")
          yield* repo.fold()
          yield* expectExact("a late commit, folded")
          const late = yield* sql<{ n: number }>`select requests::int as n from gateway_audit_hourly_keys where key_id = 'key_late'`
          expect(late.map((r) => r.n)).toEqual([1])

          // A delete of folded and new rows holds its transaction open while a fold of the new rows runs.
          yield* Effect.promise(() => seedAuditRows(query, A, 400, NOW - 2 * 24 * HOUR, NOW, "beside"))
          yield* Effect.promise(async () => {
            await other.query("begin")
            await other.query(`delete from gateway_audit_logs where (request_id like 'open-%' or request_id like 'beside-%') and id % 4 = 0`)
          })
          const kept = (yield* sql<{ n: number }>`select count(*)::int as n from gateway_audit_logs where request_id like 'beside-%' and id % 4 <> 0`)[0]!.n
          const folding = yield* Effect.fork(repo.fold())
          yield* Effect.sleep("200 millis")
          yield* Effect.promise(() => other.query("commit"))
          expect(yield* Effect.fromFiber(folding)).toBe(kept)
          yield* expectExact("a delete beside a fold")
        }).pipe(Effect.scoped)
      )

      it.effect.skipIf(store.name !== "postgresql")("an update that swaps folded and unfolded rows, a row's txid changed, a fold inside a transaction, ids restarted", () =>
        Effect.gen(function* () {
          const { sql, repo, query, expectExact } = yield* setup
          yield* Effect.promise(() => seedAuditRows(query, A, 50, NOW - 3 * HOUR, NOW, "folded"))
          yield* repo.fold()
          yield* Effect.promise(() => seedAuditRows(query, A, 50, NOW - 3 * HOUR, NOW, "unfolded"))
          // One statement swaps outcomes between a folded and an unfolded row.
          yield* sql`update gateway_audit_logs set outcome = case request_id when 'folded-9' then 'error' else 'success' end
                     where request_id in ('folded-9', 'unfolded-9')`
          yield* expectExact("a swap across the fold")
          yield* sql`update gateway_audit_logs set txid = default where request_id = 'folded-3'`
          yield* expectExact("a folded row's txid changed")
          yield* repo.fold()
          yield* expectExact("both, folded")

          // Refused (the store's raise is our mistake: a defect), its transaction rolled back.
          const inside = yield* Effect.exit(sql.withTransaction(
            Effect.zipRight(sql`insert into gateway_audit_logs ("timestamp", org_id, event_type, route, outcome, duration_ms, request_id)
                values (${NOW}, ${A}, 'api', '/x', 'success', 1, 'in-transaction')`, repo.fold())
          ))
          expect(Exit.isFailure(inside) && Cause.isDie(inside.cause)).toBe(true)

          yield* sql`truncate gateway_audit_logs restart identity`
          yield* Effect.promise(() => seedAuditRows(query, A, 7, NOW - HOUR, NOW, "restarted"))
          yield* expectExact("ids restarted")
          expect(yield* repo.fold()).toBe(7)
          yield* expectExact("ids restarted, folded")
        })
      )
    })
  })
}
