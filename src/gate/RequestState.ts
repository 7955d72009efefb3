import { randomUUID } from "node:crypto"
import { Context, Effect } from "effect"
import type { QueryFacts } from "../governance/GovernedExecutor"
import type { AuditDraft } from "../services/AuditDraft"
import type { ClientAddress } from "./ClientAddress"

/** A request's audit draft, and what the gateway needs to know of the request itself to answer and audit it. */
export interface RequestInfo extends AuditDraft {
  readonly client: ClientAddress
  /** The response streams rows; how the stream ended is audited as a row of its own. */
  streamedRows: boolean
  bodyTooLarge: boolean
  /** The response has been handed to the server: its audit row is written or being written. */
  answered: boolean
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
  Effect.map(Effect.serviceOption(RequestState), (state) => queryDraft(state._tag === "Some" ? state.value : undefined, connection, sql, eventType))

/** `onQuery` for a request's own draft, where there is one. */
export const queryDraft = (info: RequestInfo | undefined, connection: string, sql: string | null, eventType = "query") => {
  if (info !== undefined) {
    info.eventType = eventType
    info.connection = connection
    info.sql = sql
  }
  const reportNow = (facts: QueryFacts) => {
    if (info === undefined) return
    info.details = { ...facts }
    info.rows = facts.rows ?? null
    if (facts.reason !== undefined) info.blockReason = "query_blocked"
  }
  return { requestId: info?.requestId ?? randomUUID(), report: (facts: QueryFacts) => Effect.sync(() => reportNow(facts)), reportNow }
}

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
