import type { DbType } from "../domain/Connection"
import type { OrgId } from "../domain/Ids"
import { type Principal, principalLabel } from "../domain/Principal"
import type { QueryFacts } from "../governance/GovernedExecutor"
import type { AuditInsert } from "../repos/AuditInsert"

/**
 * What one request or one tool call learns on its way through, for its audit row: one draft each,
 * filled in by the gate, the handlers and the tools it reaches, and made into rows by `auditRow`.
 */
export interface AuditDraft {
  readonly requestId: string
  eventType: string
  principal: Principal | null
  /** The org a draft without a principal is audited under (a refused known key's, or self-hosted's one org), so its admins see it. */
  attributedOrg: OrgId | null
  connection: string | null
  /** The connection's dialect, which decides how the row's SQL literals are redacted; looked up when first needed. */
  dialect: DbType | null | undefined
  sql: string | null
  rows: number | null
  /** A governed query's facts, a tool call's arguments… */
  details: Record<string, unknown> | null
  /** Why it was refused on a rule of the handler's or tool's own (a blocked query, a missing scope), not on credentials or limits. */
  blockReason: string | null
  /** Governed queries run besides its own statement (a tool's, a schema explore's), by query id: each is audited as its own row, committed with this one. */
  readonly childQueries: Map<string, ChildQuery>
  /** Set when it failed in its own terms though its answer was a success (a tool call that returned an error). */
  outcome: "refused" | "error" | null
}

export interface ChildQuery {
  readonly facts: QueryFacts
  readonly sql: string | null
  /** What ran it, for the row's details (the tool, the route). */
  readonly parent: Record<string, unknown>
  /** The connection it ran on, where not the one its parent names (code's queries, whose call names none). */
  readonly connection?: string
}

export const newAuditDraft = (requestId: string, eventType: string, principal: Principal | null, attributedOrg: OrgId | null = principal?.orgId ?? null): AuditDraft => ({
  requestId,
  eventType,
  principal,
  attributedOrg,
  connection: null,
  dialect: undefined,
  sql: null,
  rows: null,
  details: null,
  blockReason: null,
  childQueries: new Map(),
  outcome: null
})

/** Where the draft's work came from and how it ended: what its row says beyond the draft. */
export interface RowContext {
  readonly route: string
  readonly durationMs: number
  readonly outcome: "success" | "refused" | "error"
  readonly method?: string | null
  readonly status?: number | null
  readonly blockReason?: string | null
  readonly clientIp?: string | null
  readonly userAgent?: string | null
}

/** The audit row of a draft: a request's, a tool call's in an agent run, the command line's. */
export const auditRow = (draft: AuditDraft, context: RowContext): AuditInsert => ({
  timestamp: Math.floor(Date.now() / 1000),
  org_id: draft.principal?.orgId ?? draft.attributedOrg,
  principal: draft.principal ? principalLabel(draft.principal) : null,
  key_id: draft.principal?.keyId ?? null,
  user_id: draft.principal?.userId ?? null,
  event_type: draft.eventType,
  method: context.method ?? null,
  route: context.route.slice(0, 512),
  status: context.status ?? null,
  connection: draft.connection,
  sql: draft.sql,
  outcome: context.outcome,
  block_reason: context.blockReason ?? null,
  rows: draft.rows,
  duration_ms: Number(context.durationMs.toFixed(3)),
  client_ip: context.clientIp ?? null,
  user_agent: context.userAgent ?? null,
  request_id: draft.requestId,
  details: draft.details
})

/**
 * The rows of the governed queries a draft's work ran besides its own statement, each on `base`
 * (the row of what ran it), its parent named with `within` (an agent run's run and step).
 */
export const childQueryRows = (draft: AuditDraft, base: AuditInsert, within: Record<string, unknown> = {}): ReadonlyArray<AuditInsert> =>
  [...draft.childQueries.values()].map(({ facts, sql, parent, connection }) => ({
    ...base,
    connection: connection ?? base.connection,
    event_type: "query",
    sql,
    outcome: facts.reason !== undefined ? "refused" : facts.completeness !== undefined || facts.planned === true ? "success" : "error",
    block_reason: facts.reason !== undefined ? "query_blocked" : null,
    rows: facts.rows ?? null,
    duration_ms: Number((facts.execution_ms ?? 0).toFixed(3)),
    details: { ...facts, parent: { ...parent, ...within } }
  }))
