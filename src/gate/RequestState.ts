import { randomUUID } from "node:crypto"
import { Context, Effect } from "effect"
import type { DbType } from "../domain/Connection"
import type { OrgId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import type { QueryFacts } from "../governance/GovernedExecutor"
import type { ClientAddress } from "./ClientAddress"

/** What one request learns on its way through, read back when its audit row is written. */
export interface RequestInfo {
  readonly requestId: string
  readonly client: ClientAddress
  eventType: string
  principal: Principal | null
  /** The org a request without a principal is audited under (a refused known key's, or self-hosted's one org), so its admins see it. */
  attributedOrg: OrgId | null
  connection: string | null
  /** The connection's dialect, which decides how the audit row's SQL literals are redacted; looked up when first needed. */
  dialect: DbType | null | undefined
  sql: string | null
  rows: number | null
  /** A governed query's facts for its audit row (tables, completeness, refusal reason…). */
  details: Record<string, unknown> | null
  /** Set when a handler refused the request on a rule of its own (a blocked query), not on credentials or limits. */
  blockReason: string | null
  /** Governed queries the request ran besides its own statement (an MCP tool's, a schema explore's), by query id: each is audited as its own row, committed with the request's. */
  readonly childQueries: Map<string, ChildQuery>
  /** The response streams rows; how the stream ended is audited as a row of its own. */
  streamedRows: boolean
  /** Set when a request answered 200 but failed in its own terms (an MCP tool call that returned an error). */
  outcome: "refused" | "error" | null
  bodyTooLarge: boolean
  /** The response has been handed to the server: its audit row is written or being written. */
  answered: boolean
}

export interface ChildQuery {
  readonly facts: QueryFacts
  readonly sql: string | null
  /** What ran it, for the row's details (the tool, the route). */
  readonly parent: Record<string, unknown>
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

/**
 * Marks the request as one that runs several governed queries on a connection (each gets its own
 * audit row under the request's id) and returns the request id and the sink for their facts.
 */
export const onChildQueries = (connection: string, eventType: string) =>
  Effect.map(Effect.serviceOption(RequestState), (state) => {
    const info = state._tag === "Some" ? state.value : undefined
    if (info !== undefined) {
      info.eventType = eventType
      info.connection = connection
    }
    return {
      requestId: info?.requestId ?? randomUUID(),
      report: (facts: QueryFacts, sql: string) =>
        Effect.sync(() => info?.childQueries.set(facts.query_id, { facts, sql, parent: { event_type: eventType, request_id: info.requestId } }))
    }
  })
