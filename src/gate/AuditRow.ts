import type { HttpServerRequest } from "@effect/platform"
import { type Principal, principalLabel } from "../domain/Principal"
import type { AuditInsert } from "../repos/AuditInsert"
import type { ChildQuery, RequestInfo } from "./RequestState"

/** The audit row of a request, from what the request learned on its way through. */
export const auditRow = (
  request: HttpServerRequest.HttpServerRequest,
  info: RequestInfo,
  status: number | null,
  outcome: "success" | "refused" | "error",
  blockReason: string | null,
  durationMs: number
) => ({
  timestamp: Math.floor(Date.now() / 1000),
  org_id: info.principal?.orgId ?? info.attributedOrg,
  principal: info.principal ? principalLabel(info.principal) : null,
  key_id: info.principal?.keyId ?? null,
  user_id: info.principal?.userId ?? null,
  event_type: info.eventType,
  method: request.method,
  route: request.url.split("?")[0]!.slice(0, 512),
  status,
  connection: info.connection,
  sql: info.sql,
  outcome,
  block_reason: blockReason,
  rows: info.rows,
  duration_ms: Number(durationMs.toFixed(3)),
  client_ip: info.client.ip,
  user_agent: request.headers["user-agent"]?.slice(0, 512) ?? null,
  request_id: info.requestId,
  details: info.details
})

/**
 * The audit row of what a principal did outside an HTTP request (an agent run's step, the command
 * line): who, what and how long as given, the request's own fields (method, status, client) empty.
 */
export const principalRow = (
  principal: Principal,
  fields: Pick<AuditInsert, "event_type" | "route" | "request_id" | "details"> & { readonly durationMs: number } & Partial<AuditInsert>
): AuditInsert => {
  const { durationMs, ...given } = fields
  return {
    timestamp: Math.floor(Date.now() / 1000),
    org_id: principal.orgId,
    principal: principalLabel(principal),
    key_id: principal.keyId,
    user_id: principal.userId,
    method: null,
    status: null,
    connection: null,
    sql: null,
    outcome: "success",
    block_reason: null,
    rows: null,
    duration_ms: Number(durationMs.toFixed(3)),
    client_ip: null,
    user_agent: null,
    ...given
  }
}

/** The audit row of a governed query run besides a request's (or a run's step's) own statement, on the row of what ran it. */
export const childQueryRow = (base: AuditInsert, { facts, sql, parent }: ChildQuery): AuditInsert => ({
  ...base,
  event_type: "query",
  sql,
  outcome: facts.reason !== undefined ? "refused" : facts.completeness !== undefined || facts.planned === true ? "success" : "error",
  block_reason: facts.reason !== undefined ? "query_blocked" : null,
  rows: facts.rows ?? null,
  duration_ms: Number((facts.execution_ms ?? 0).toFixed(3)),
  details: { ...facts, parent }
})

/** The rows of the governed queries a request ran besides its own, under its request id. */
export const childQueryRows = (request: HttpServerRequest.HttpServerRequest, info: RequestInfo) =>
  [...info.childQueries.values()].map((child) => childQueryRow(auditRow(request, info, 200, "success", null, 0), child))
