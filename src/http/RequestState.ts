import { randomUUID } from "node:crypto"
import { Context, Effect } from "effect"
import type { Principal } from "../domain/Principal"
import type { QueryFacts } from "../governance/GovernedExecutor"
import type { AuditInsert } from "../repos/AuditRepo"
import type { ClientAddress } from "./ClientAddress"

/** What one request learns on its way through, read back when its audit row is written. */
export interface RequestInfo {
  readonly requestId: string
  readonly client: ClientAddress
  eventType: string
  principal: Principal | null
  connection: string | null
  sql: string | null
  rows: number | null
  /** A governed query's facts for its audit row (tables, completeness, refusal reason…). */
  details: Record<string, unknown> | null
  /** Set when a handler refused the request on a rule of its own (a blocked query), not on credentials or limits. */
  blockReason: string | null
  /** Rows recorded in the same commit as the request's own (the governed queries an MCP tool call ran). */
  relatedAuditRows: Array<AuditInsert>
  /** The response streams rows; how the stream ended is audited as a row of its own. */
  streamedRows: boolean
  /** Set when a request answered 200 but failed in its own terms (an MCP tool call that returned an error). */
  outcome: "refused" | "error" | null
  bodyTooLarge: boolean
}

export class RequestState extends Context.Tag("sluice/RequestState")<RequestState, RequestInfo>() {}

/** Names the connection in the request's audit row (handlers see RequestState only as an option). */
export const onConnection = (name: string) =>
  Effect.flatMap(Effect.serviceOption(RequestState), (info) =>
    Effect.sync(() => {
      if (info._tag === "Some") info.value.connection = name
    })
  )

/** Marks the response as streamed rows, so how the stream ends gets its own audit row. */
export const onStreamedRows = Effect.flatMap(Effect.serviceOption(RequestState), (info) =>
  Effect.sync(() => {
    if (info._tag === "Some") info.value.streamedRows = true
  })
)

/**
 * Marks the request as a governed query in its audit row and returns the request id and the sink
 * for the executor's facts (rows, tables, completeness, refusal reason).
 */
export const onQuery = (connection: string, sql: string | null, eventType = "query") =>
  Effect.map(Effect.serviceOption(RequestState), (state) => {
    const info = state._tag === "Some" ? state.value : undefined
    if (info !== undefined) {
      info.eventType = eventType
      info.connection = connection
      info.sql = sql
    }
    return {
      requestId: info?.requestId ?? randomUUID(),
      report: (facts: QueryFacts) =>
        Effect.sync(() => {
          if (info === undefined) return
          info.details = { ...facts }
          info.rows = facts.rows ?? null
          if (facts.reason !== undefined) info.blockReason = "query_blocked"
        })
    }
  })
