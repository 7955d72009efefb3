import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import { tenantScope } from "./Tenant"

export interface HealthCheck {
  readonly org_id: string
  readonly connection_id: string
  readonly ok: boolean
  readonly latency_ms: number
  readonly step: string | null
  readonly error: string | null
}

export interface HealthEvent {
  readonly id: string
  readonly checked_at: Date
  readonly ok: boolean
  readonly latency_ms: number
  readonly step: string | null
  readonly error: string | null
}

export interface HealthSummaryRow {
  readonly name: string
  readonly db_type: string
  readonly checks: number
  readonly failures: number
  readonly p50_ms: number | null
  readonly p95_ms: number | null
  readonly last_checked_at: Date | null
  readonly last_ok: boolean | null
  readonly last_error: string | null
  readonly last_error_step: string | null
  readonly last_error_at: Date | null
}

/** Health-check results: written in batches by the health loop, read per org by the health routes. */
export class ConnectionHealthRepo extends Effect.Service<ConnectionHealthRepo>()("sluice/ConnectionHealthRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)

    const record = (checks: ReadonlyArray<HealthCheck>) =>
      checks.length === 0 ? Effect.void : sql`insert into connection_health_events ${sql.insert(checks.map((c) => ({ ...c })))}`.pipe(Effect.asVoid)

    /** Per connection of the org: checks, failures and latency percentiles since `since`, and the latest check and error. */
    const summary = (orgId: OrgId, since: Date, name: string | null) =>
      sql<HealthSummaryRow>`select c.name, c.db_type,
          count(e.id)::int as checks,
          (count(e.id) filter (where not e.ok))::int as failures,
          percentile_cont(0.5) within group (order by e.latency_ms) filter (where e.ok) as p50_ms,
          percentile_cont(0.95) within group (order by e.latency_ms) filter (where e.ok) as p95_ms,
          last.checked_at as last_checked_at, last.ok as last_ok,
          failed.error as last_error, failed.step as last_error_step, failed.checked_at as last_error_at
        from connections c
        left join connection_health_events e on e.connection_id = c.id and e.checked_at >= ${since}
        left join lateral (select checked_at, ok from connection_health_events
          where connection_id = c.id order by checked_at desc limit 1) last on true
        left join lateral (select checked_at, error, step from connection_health_events
          where connection_id = c.id and not ok order by checked_at desc limit 1) failed on true
        where c.org_id = ${orgId} ${name === null ? sql`` : sql`and c.name = ${name}`}
        group by c.id, c.name, c.db_type, last.checked_at, last.ok, failed.error, failed.step, failed.checked_at`.pipe(withOrg(orgId))

    /** One connection's checks, newest first, before the event id `before`. */
    const history = (orgId: OrgId, name: string, limit: number, before: string | null) =>
      sql<HealthEvent>`select id::text as id, checked_at, ok, latency_ms, step, error from connection_health_events
        where org_id = ${orgId} and connection_id = (select id from connections where org_id = ${orgId} and name = ${name})
        ${before === null ? sql`` : sql`and id < ${before}::bigint`}
        order by id desc limit ${limit}`.pipe(withOrg(orgId))

    /** The org's checks since `since`, all connections together. */
    const overall = (orgId: OrgId, since: Date) =>
      sql<{ checks: number; failures: number; p50_ms: number | null; p95_ms: number | null }>`select
          count(*)::int as checks, (count(*) filter (where not ok))::int as failures,
          percentile_cont(0.5) within group (order by latency_ms) filter (where ok) as p50_ms,
          percentile_cont(0.95) within group (order by latency_ms) filter (where ok) as p95_ms
        from connection_health_events where org_id = ${orgId} and checked_at >= ${since}`.pipe(
        Effect.map((rows) => rows[0]!),
        withOrg(orgId)
      )

    const pruneBefore = (before: Date) =>
      sql`delete from connection_health_events where checked_at < ${before}`.raw.pipe(
        Effect.map((result) => (result as { rowCount?: number }).rowCount ?? 0)
      )

    return { record, summary, history, overall, pruneBefore } as const
  })
}) {}
