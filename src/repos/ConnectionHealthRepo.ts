import { SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Schema } from "effect"
import { DbType } from "../domain/Connection"
import { ConnectionId, OrgId } from "../domain/Ids"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

// How one check went, as a check is recorded and as its event is read back.
const checkOutcome = {
  ok: Schema.Boolean,
  latency_ms: Schema.Number,
  step: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String)
}

const HealthCheck = Schema.Struct({ org_id: OrgId, connection_id: ConnectionId, ...checkOutcome })
export type HealthCheck = typeof HealthCheck.Type

const HealthEvent = Schema.Struct({ id: Schema.String, checked_at: Schema.DateFromSelf, ...checkOutcome })
export type HealthEvent = typeof HealthEvent.Type

const HealthSummaryRow = Schema.Struct({
  name: Schema.String,
  db_type: DbType,
  checks: Schema.Number,
  failures: Schema.Number,
  p50_ms: Schema.NullOr(Schema.Number),
  p95_ms: Schema.NullOr(Schema.Number),
  last_checked_at: Schema.NullOr(Schema.DateFromSelf),
  last_ok: Schema.NullOr(Schema.Boolean),
  last_error: Schema.NullOr(Schema.String),
  last_error_step: Schema.NullOr(Schema.String),
  last_error_at: Schema.NullOr(Schema.DateFromSelf)
})
export type HealthSummaryRow = typeof HealthSummaryRow.Type

const OverallRow = Schema.Struct({ checks: Schema.Number, failures: Schema.Number, p50_ms: Schema.NullOr(Schema.Number), p95_ms: Schema.NullOr(Schema.Number) })

/** Health-check results: written in batches by the health loop, read per org by the health routes. */
export class ConnectionHealthRepo extends Effect.Service<ConnectionHealthRepo>()("sluice/ConnectionHealthRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("connection health store")

    const insertChecks = SqlSchema.void({
      Request: Schema.Array(HealthCheck),
      execute: (checks) => sql`insert into connection_health_events ${sql.insert(checks.map((check) => ({ ...check })))}`
    })
    const record = Effect.fn("ConnectionHealthRepo.record")((checks: ReadonlyArray<HealthCheck>) => (checks.length === 0 ? Effect.void : insertChecks(checks)), failures)

    const summaries = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, since: Schema.DateFromSelf, name: Schema.NullOr(Schema.String) }),
      Result: HealthSummaryRow,
      execute: ({ orgId, since, name }) =>
        sql`select c.name, c.db_type,
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
          group by c.id, c.name, c.db_type, last.checked_at, last.ok, failed.error, failed.step, failed.checked_at`
    })
    /** Per connection of the org: checks, failures and latency percentiles since `since`, and the latest check and error. */
    const summary = Effect.fn("ConnectionHealthRepo.summary")(
      (orgId: OrgId, since: Date, name: string | null) => summaries({ orgId, since, name }).pipe(withOrg(orgId)),
      failures
    )

    const events = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, name: Schema.String, limit: Schema.Number, before: Schema.NullOr(Schema.String) }),
      Result: HealthEvent,
      execute: ({ orgId, name, limit, before }) =>
        sql`select id::text as id, checked_at, ok, latency_ms, step, error from connection_health_events
          where org_id = ${orgId} and connection_id = (select id from connections where org_id = ${orgId} and name = ${name})
          ${before === null ? sql`` : sql`and id < ${before}::bigint`}
          order by id desc limit ${limit}`
    })
    /** One connection's checks, newest first, before the event id `before`. */
    const history = Effect.fn("ConnectionHealthRepo.history")(
      (orgId: OrgId, name: string, limit: number, before: string | null) => events({ orgId, name, limit, before }).pipe(withOrg(orgId)),
      failures
    )

    const overallSince = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, since: Schema.DateFromSelf }),
      Result: OverallRow,
      execute: ({ orgId, since }) =>
        sql`select
            count(*)::int as checks, (count(*) filter (where not ok))::int as failures,
            percentile_cont(0.5) within group (order by latency_ms) filter (where ok) as p50_ms,
            percentile_cont(0.95) within group (order by latency_ms) filter (where ok) as p95_ms
          from connection_health_events where org_id = ${orgId} and checked_at >= ${since}`
    })
    /** The org's checks since `since`, all connections together. */
    const overall = Effect.fn("ConnectionHealthRepo.overall")((orgId: OrgId, since: Date) => overallSince({ orgId, since }).pipe(withOrg(orgId)), failures)

    const pruneChecks = SqlSchema.single({
      Request: Schema.DateFromSelf,
      Result: Schema.Struct({ pruned: Schema.Number }),
      execute: (before) => sql`with gone as (delete from connection_health_events where checked_at < ${before} returning 1) select count(*)::int as pruned from gone`
    })
    /** System work across orgs: drops the checks older than `before`; how many it dropped. */
    const pruneBefore = Effect.fn("ConnectionHealthRepo.pruneBefore")((before: Date) => pruneChecks(before).pipe(Effect.map((row) => row.pruned)), failures)

    return { record, summary, history, overall, pruneBefore } as const
  })
}) {}
