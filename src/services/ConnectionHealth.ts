import { Effect, Option, Schema } from "effect"
import { ConnectorPools, type PoolTarget, serverOf } from "../../layers/connectors/ConnectorPools"
import { type ConnectionHealth as Health, HEALTH_STATUSES, type HealthStatus } from "../domain/ConnectionHealth"
import type { Principal } from "../domain/Principal"
import { decodeCursor, pageOf } from "../domain/Pagination"
import { ConnectionHealthRepo, type HealthCheck, type HealthSummaryRow } from "../repos/ConnectionHealthRepo"
import { asHealthCheck, ConnectionChecks } from "./ConnectionChecks"
import { Connections } from "./Connections"

const CONCURRENCY = 8
// Pings sent to one database server at once, however many connections name it.
const PINGS_PER_SERVER = 2
const DEFAULT_WINDOW_MINUTES = 60
const SLOW_P95_MS = 1_000
const Cursor = Schema.Tuple(Schema.String)

const windowStart = (minutes: number) => new Date(Date.now() - minutes * 60_000)
const rate = (failures: number, checks: number) => (checks === 0 ? null : Number((failures / checks).toFixed(4)))
const ms = (value: number | null) => (value === null ? null : Number(Number(value).toFixed(3)))

/** Unhealthy when the latest check failed; degraded when a check in the window failed or p95 is slow. */
const statusOf = (row: HealthSummaryRow): HealthStatus => {
  if (row.last_ok === null) return "unknown"
  if (!row.last_ok) return "unhealthy"
  if (row.failures > 0 || (row.p95_ms !== null && row.p95_ms > SLOW_P95_MS)) return "degraded"
  return "healthy"
}

const toHealth = (row: HealthSummaryRow, windowMinutes: number): Health => ({
  name: row.name,
  db_type: row.db_type,
  status: statusOf(row),
  window_minutes: windowMinutes,
  checks: row.checks,
  error_rate: rate(row.failures, row.checks),
  p50_ms: ms(row.p50_ms),
  p95_ms: ms(row.p95_ms),
  last_checked_at: row.last_checked_at,
  last_error:
    row.last_error_at === null ? null : { message: row.last_error ?? "", step: row.last_error_step, at: row.last_error_at }
})

/** Periodic pings of every connection, and what they say: status, latency percentiles, error rate, last error. */
export class ConnectionHealth extends Effect.Service<ConnectionHealth>()("sluice/ConnectionHealth", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections
    const checks = yield* ConnectionChecks
    const pools = yield* ConnectorPools
    const repo = yield* ConnectionHealthRepo

    /** One round: pings every connection of every org, a few at a time (at most two per server), and records all results in one write. */
    const checkAll = Effect.gen(function* () {
      const all = yield* connections.everyTarget
      const lanes = new Map<string, Effect.Semaphore>()
      const inLane = (target: PoolTarget) => <A, E>(ping: Effect.Effect<A, E>) => {
        const server = serverOf(target)
        if (server === null) return ping
        let lane = lanes.get(server)
        if (lane === undefined) lanes.set(server, (lane = Effect.unsafeMakeSemaphore(PINGS_PER_SERVER)))
        return lane.withPermits(1)(ping)
      }
      const results = yield* Effect.forEach(
        all,
        ({ row, target }): Effect.Effect<HealthCheck> => {
          return Option.match(target, {
            onNone: () =>
              Effect.succeed(asHealthCheck(row.org_id, row.id, { ok: false, latency_ms: 0, step: "config", error: "The stored credentials could not be decrypted" })),
            onSome: (t) => Effect.map(inLane(t)(checks.check(t)), (outcome) => asHealthCheck(row.org_id, row.id, outcome))
          })
        },
        { concurrency: CONCURRENCY }
      )
      yield* repo.record(results)
      return results.length
    })

    const list = Effect.fn("ConnectionHealth.list")(function* (principal: Principal, windowMinutes = DEFAULT_WINDOW_MINUTES) {
      const rows = yield* repo.summary(principal.orgId, windowStart(windowMinutes), null)
      return { items: rows.map((row) => toHealth(row, windowMinutes)).sort((a, b) => a.name.localeCompare(b.name)) }
    })

    const of = Effect.fn("ConnectionHealth.of")(function* (principal: Principal, name: string, windowMinutes = DEFAULT_WINDOW_MINUTES) {
      yield* connections.get(principal, name)
      const rows = yield* repo.summary(principal.orgId, windowStart(windowMinutes), name)
      return toHealth(rows[0]!, windowMinutes)
    })

    const history = Effect.fn("ConnectionHealth.history")(function* (
      principal: Principal,
      name: string,
      params: { limit?: number | undefined; cursor?: string | undefined }
    ) {
      yield* connections.get(principal, name)
      const limit = params.limit ?? 100
      const before = params.cursor === undefined ? null : (yield* decodeCursor(params.cursor, Cursor))[0]
      const rows = yield* repo.history(principal.orgId, name, limit + 1, before)
      const page = pageOf(rows, limit, (event) => [event.id])
      return { ...page, items: page.items.map(({ id: _id, ...event }) => event) }
    })

    const stats = Effect.fn("ConnectionHealth.stats")(function* (principal: Principal, windowMinutes = DEFAULT_WINDOW_MINUTES) {
      const since = windowStart(windowMinutes)
      const [rows, overall] = yield* Effect.all([repo.summary(principal.orgId, since, null), repo.overall(principal.orgId, since)])
      const count = <K extends string>(keys: ReadonlyArray<K>, of: (row: HealthSummaryRow) => K) => {
        const counts = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>
        for (const row of rows) counts[of(row)] = (counts[of(row)] ?? 0) + 1
        return counts
      }
      return {
        window_minutes: windowMinutes,
        connections: rows.length,
        by_db_type: count([], (row) => row.db_type),
        by_status: count(HEALTH_STATUSES, statusOf),
        open_pools: pools.stats(principal.orgId).length,
        checks: overall.checks,
        error_rate: rate(overall.failures, overall.checks),
        p50_ms: ms(overall.p50_ms),
        p95_ms: ms(overall.p95_ms)
      }
    })

    return { checkAll, list, of, history, stats, pruneBefore: repo.pruneBefore } as const
  }),
  dependencies: [ConnectionHealthRepo.Default, ConnectionChecks.Default, Connections.Default, ConnectorPools.Default]
}) {}
