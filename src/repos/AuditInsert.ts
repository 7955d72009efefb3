import { storable } from "./Storable"

// A statement is at most 100,000 characters (MAX_SQL_CHARS); a header, name or detail needs far less.
const MAX_SQL = 100_000
const MAX_FIELD = 512
const MAX_DETAIL = 4_000

export type AuditInsert = {
  readonly timestamp: number
  readonly org_id: string | null
  readonly principal: string | null
  readonly key_id: string | null
  readonly user_id: string | null
  readonly event_type: string
  readonly method: string | null
  readonly route: string
  readonly status: number | null
  readonly connection: string | null
  readonly sql: string | null
  readonly outcome: "success" | "refused" | "error"
  readonly block_reason: string | null
  readonly rows: number | null
  readonly duration_ms: number
  readonly client_ip: string | null
  readonly user_agent: string | null
  readonly request_id: string
  /** A governed query's facts, a tool call's arguments… (a JSON column). */
  readonly details: Record<string, unknown> | null
}

/** The row as the store will take it, whatever its fields hold: one bad field never fails a batch. */
export const storableAuditRow = (row: AuditInsert): AuditInsert => {
  const field = <A>(value: A, maxChars = MAX_FIELD) => storable(value, maxChars) as A
  return {
    timestamp: field(row.timestamp),
    org_id: field(row.org_id),
    principal: field(row.principal),
    key_id: field(row.key_id),
    user_id: field(row.user_id),
    event_type: field(row.event_type),
    method: field(row.method),
    route: field(row.route),
    status: field(row.status),
    connection: field(row.connection),
    sql: field(row.sql, MAX_SQL),
    outcome: row.outcome,
    block_reason: field(row.block_reason),
    rows: field(row.rows),
    duration_ms: field(row.duration_ms) ?? 0,
    client_ip: field(row.client_ip),
    user_agent: field(row.user_agent),
    request_id: field(row.request_id),
    details: field(row.details, MAX_DETAIL)
  }
}
