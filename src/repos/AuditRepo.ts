import { SqlClient } from "@effect/sql"
import { Chunk, Effect, Option, Stream } from "effect"
import type { OrgId } from "../domain/Ids"
import type { AuditInsert } from "./AuditInsert"
import { tenantScope } from "./Tenant"

export interface AuditRow extends AuditInsert {
  readonly id: string
  /** The key's name, while the key exists (a deleted key's rows keep only its id and prefix). */
  readonly key_name: string | null
}


export interface AuditFilter {
  readonly from?: number | undefined
  readonly to?: number | undefined
  readonly event_type?: string | undefined
  readonly connection?: string | undefined
  readonly key_id?: string | undefined
  readonly outcome?: string | undefined
  /** Leaves out plain GET requests to /api; governed reads of rows are other event types and stay. */
  readonly exclude_reads?: boolean | undefined
}

const COLUMNS = `gateway_audit_logs.id::text as id, "timestamp"::float8 as "timestamp", gateway_audit_logs.org_id, principal, key_id,
  api_keys.name as key_name, gateway_audit_logs.user_id, event_type, method, route, status, connection, sql, outcome, block_reason, rows,
  duration_ms, client_ip, user_agent, request_id, details`

export class AuditRepo extends Effect.Service<AuditRepo>()("sluice/AuditRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)

    const columnsOf = (row: AuditInsert) => ({ ...row, details: row.details === null ? null : JSON.stringify(row.details) })

    /** One INSERT for a whole group-commit batch. */
    const insertBatch = (rows: ReadonlyArray<AuditInsert>) =>
      sql`insert into gateway_audit_logs ${sql.insert(rows.map(columnsOf))}`.pipe(Effect.asVoid)

    /** Overwrites a row written before its request answered with the final one; false when no such row was committed. */
    const complete = (id: string, row: AuditInsert) => {
      const { timestamp: _written, ...final } = columnsOf(row)
      return sql<{ id: string }>`update gateway_audit_logs set ${sql.update(final)} where id = ${id}::bigint returning id::text as id`.pipe(
        Effect.map((rows) => rows.length > 0)
      )
    }

    const where = (orgId: OrgId, f: AuditFilter, beforeId: string | null) =>
      sql.and([
        sql`gateway_audit_logs.org_id = ${orgId}`,
        ...(f.from !== undefined ? [sql`"timestamp" >= ${f.from}`] : []),
        ...(f.to !== undefined ? [sql`"timestamp" <= ${f.to}`] : []),
        ...(f.event_type !== undefined ? [sql`event_type = ${f.event_type}`] : []),
        ...(f.connection !== undefined ? [sql`connection = ${f.connection}`] : []),
        ...(f.key_id !== undefined ? [sql`key_id = ${f.key_id}`] : []),
        ...(f.outcome !== undefined ? [sql`outcome = ${f.outcome}`] : []),
        ...(f.exclude_reads === true ? [sql`not (event_type = 'api' and method = 'GET')`] : []),
        ...(beforeId !== null ? [sql`gateway_audit_logs.id < ${beforeId}::bigint`] : [])
      ])

    /** Newest first, keyset-paginated by id. */
    const page = (orgId: OrgId, filter: AuditFilter, beforeId: string | null, limit: number) =>
      sql<AuditRow>`select ${sql.unsafe(COLUMNS)} from gateway_audit_logs
        left join api_keys on api_keys.id = gateway_audit_logs.key_id and api_keys.org_id = gateway_audit_logs.org_id
        where ${where(orgId, filter, beforeId)} order by gateway_audit_logs.id desc limit ${limit}`.pipe(withOrg(orgId))

    /** The row of the governed query with this id (the query's own row, or its request's child row). */
    const byQueryId = (orgId: OrgId, queryId: string) =>
      sql<AuditRow>`select ${sql.unsafe(COLUMNS)} from gateway_audit_logs
        left join api_keys on api_keys.id = gateway_audit_logs.key_id and api_keys.org_id = gateway_audit_logs.org_id
        where gateway_audit_logs.org_id = ${orgId} and details ? 'query_id' and details->>'query_id' = ${queryId}
        order by gateway_audit_logs.id desc limit 1`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    const exportStream = (orgId: OrgId, filter: AuditFilter, maxRows: number, batch = 1000) =>
      Stream.paginateChunkEffect({ beforeId: null as string | null, remaining: maxRows }, (state) =>
        page(orgId, filter, state.beforeId, Math.min(batch, state.remaining)).pipe(
          Effect.map((rows) => {
            const remaining = state.remaining - rows.length
            const last = rows.at(-1)
            const next =
              last && rows.length === Math.min(batch, state.remaining) && remaining > 0
                ? Option.some({ beforeId: last.id, remaining })
                : Option.none()
            return [rows, next] as const
          }),
          Effect.map(([rows, next]) => [Chunk.unsafeFromArray(rows), next] as const)
        )
      )

    /**
     * Counts since `since`: whole hours from the hourly rollups (kept by triggers, see 0015_audit_rollups),
     * only the window's first partial hour from the log itself, so the cost follows the window, not the log.
     * Ties in the top lists are broken by name.
     */
    const stats = (orgId: OrgId, since: number) => {
      const firstFullHour = Math.ceil(since / 3600) * 3600
      const partialHour = sql`org_id = ${orgId} and "timestamp" >= ${since} and "timestamp" < ${firstFullHour}`
      const fullHours = sql`org_id = ${orgId} and hour >= ${firstFullHour}`
      return Effect.all(
        {
          hourly: sql<{ hour: number; success: number; refused: number; error: number }>`select
              hour::float8 as hour, success::int as success, refused::int as refused, error::int as error
            from (
              select hour, success, refused, error from gateway_audit_hourly where ${fullHours}
              union all
              select "timestamp" / 3600 * 3600, count(*) filter (where outcome = 'success'),
                count(*) filter (where outcome = 'refused'), count(*) filter (where outcome = 'error')
              from gateway_audit_logs where ${partialHour} group by 1
            ) counts order by hour`,
          topKeys: sql<{ key_id: string; principal: string | null; requests: number }>`select
              key_id, max(principal) as principal, sum(requests)::int as requests
            from (
              select key_id, principal, requests from gateway_audit_hourly_keys where ${fullHours}
              union all
              select key_id, principal, 1 from gateway_audit_logs where ${partialHour} and key_id is not null
            ) keys group by key_id order by requests desc, key_id limit 10`,
          blockReasons: sql<{ block_reason: string; count: number }>`select block_reason, sum(count)::int as count
            from (
              select block_reason, count from gateway_audit_hourly_block_reasons where ${fullHours}
              union all
              select block_reason, 1 from gateway_audit_logs where ${partialHour} and block_reason is not null
            ) reasons group by block_reason order by count desc, block_reason limit 20`
        },
        { concurrency: 1 }
      ).pipe(
        Effect.map(({ hourly, topKeys, blockReasons }) => {
          const sum = (field: "success" | "refused" | "error") => hourly.reduce((n, h) => n + h[field], 0)
          const [success, refused, error] = [sum("success"), sum("refused"), sum("error")]
          return { totals: { total: success + refused + error, success, refused, error }, hourly, topKeys, blockReasons }
        }),
        withOrg(orgId)
      )
    }

    /** Cloud retention: deletes up to `batch` rows older than `before`; returns how many went. */
    const pruneBefore = (before: number, batch = 10_000) =>
      sql`delete from gateway_audit_logs where id in (
          select id from gateway_audit_logs where "timestamp" < ${before} limit ${batch})`.raw.pipe(
        Effect.map((result) => (result as { rowCount?: number }).rowCount ?? 0)
      )

    return { byQueryId, insertBatch, complete, page, exportStream, stats, pruneBefore } as const
  })
}) {}
