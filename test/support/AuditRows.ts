/** Bulk audit rows and the audit stats computed from them directly, for tests that compare the two. */

export type Query = (text: string, params: Array<unknown>) => Promise<ReadonlyArray<any>>

export interface AuditStatsShape {
  readonly since: number
  readonly total: number
  readonly success: number
  readonly refused: number
  readonly error: number
  readonly hourly: ReadonlyArray<{ hour: number; success: number; refused: number; error: number }>
  readonly top_keys: ReadonlyArray<{ key_id: string; principal: string | null; requests: number }>
  readonly block_reasons: ReadonlyArray<{ block_reason: string; count: number }>
}

/**
 * `count` rows for `orgId` (null: unattributed) spread evenly over [from, to] epoch seconds, with
 * every outcome, 13 keys (some rows keyless, some keyed rows without or with another principal),
 * 26 block reasons (some on successes) and near-equal counts, so ties and limits are exercised.
 */
export const seedAuditRows = (query: Query, orgId: string | null, count: number, from: number, to: number, tag: string) =>
  query(
    `insert into gateway_audit_logs ("timestamp", org_id, principal, key_id, event_type, method, route, status, outcome,
       block_reason, duration_ms, request_id)
     select $2::bigint + (i::bigint * ($3::bigint - $2::bigint)) / $4::bigint, $1::text,
       case when i % 17 = 0 then null when i % 19 = 0 then 'user:u' || (i % 3) else 'key:sp_' || (i * 7 % 13) end,
       case when i % 5 = 0 then null else 'key_' || (i * 7 % 13) end,
       'api', 'GET', '/api/plan', 200,
       case when i % 9 < 6 then 'success' when i % 9 < 8 then 'refused' else 'error' end,
       case when i % 9 in (6, 7) then 'reason_' || (i * 3 % 25) when i % 23 = 0 then 'internal' end,
       1, $5::text || '-' || i
     from generate_series(1, $4::int) as i`,
    [orgId, from, to, count, tag]
  )

/** The stats as the log's rows give them (rows up to `maxId`), with ties broken by name. */
export const rawAuditStats = async (query: Query, orgId: string, since: number, maxId = "9223372036854775807"): Promise<AuditStatsShape> => {
  const where = `org_id = $1 and "timestamp" >= $2 and id <= $3::bigint`
  const params = [orgId, since, maxId]
  const hourly = await query(
    `select ("timestamp" / 3600 * 3600)::float8 as hour,
       count(*) filter (where outcome = 'success')::int as success,
       count(*) filter (where outcome = 'refused')::int as refused,
       count(*) filter (where outcome = 'error')::int as error
     from gateway_audit_logs where ${where} group by 1 order by 1`,
    params
  )
  const topKeys = await query(
    `select key_id, max(principal) as principal, count(*)::int as requests
     from gateway_audit_logs where ${where} and key_id is not null
     group by key_id order by requests desc, key_id limit 10`,
    params
  )
  const blockReasons = await query(
    `select block_reason, count(*)::int as count
     from gateway_audit_logs where ${where} and block_reason is not null
     group by block_reason order by count desc, block_reason limit 20`,
    params
  )
  const sum = (field: "success" | "refused" | "error") => hourly.reduce((n, h) => n + h[field], 0)
  return {
    since,
    total: sum("success") + sum("refused") + sum("error"),
    success: sum("success"),
    refused: sum("refused"),
    error: sum("error"),
    hourly: hourly.map((h) => ({ ...h })),
    top_keys: topKeys.map((k) => ({ ...k })),
    block_reasons: blockReasons.map((b) => ({ ...b }))
  }
}
