import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Stream } from "effect"
import type { AgentRunEvent, RunTextDelta } from "../domain/AgentRun"
import type { Principal } from "../domain/Principal"
import type { AgentRuns } from "../services/AgentRuns"
import { eventStream } from "./EventStream"
import type { Gate } from "../gate/Gate"

const EVENT_STREAM = "text/event-stream"
const KEEP_ALIVE = Duration.seconds(15)
const encoder = new TextEncoder()

/**
 * One server-sent event per run event, its seq the id a client resumes from with Last-Event-ID; the
 * model's streaming text as `text_delta` events without an id (they are not kept, so not resumed).
 */
const sse = (event: AgentRunEvent | RunTextDelta) =>
  encoder.encode(
    !("seq" in event)
      ? `event: text_delta\ndata: ${JSON.stringify({ turn: event.turn, offset: event.offset, text: event.text })}\n\n`
      : `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify({ seq: event.seq, type: event.type, data: event.data, created_at: event.created_at })}\n\n`
  )

/** The seq a client resumes after: digits only (Number would take "1e3" for 1000 and skip events). */
const lastEventId = (header: string | undefined) => (header !== undefined && /^\d{1,15}$/.test(header) ? Number(header) : undefined)

/**
 * A run's events as the caller asked for them: one JSON page, or with `Accept: text/event-stream`
 * a server-sent event stream that follows the run to its end, resumes from Last-Event-ID, keeps the
 * connection alive, and stops when the caller's credential does.
 */
export const runEventsResponse = (
  runs: AgentRuns,
  gate: Gate,
  principal: Principal,
  runId: string,
  params: { readonly after?: number | undefined; readonly limit?: number | undefined }
) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!(request.headers["accept"] ?? "").includes(EVENT_STREAM)) {
      return HttpServerResponse.unsafeJson({ items: yield* runs.events(principal, runId, params.after ?? 0, params.limit ?? 200) })
    }
    yield* runs.get(principal, runId)
    const after = lastEventId(request.headers["last-event-id"]) ?? params.after ?? 0
    // A failure mid-stream is the stream's last event; the client reconnects with Last-Event-ID.
    const events = Stream.map(runs.follow(principal, runId, after), sse)
    const keepAlive = Stream.map(Stream.tick(KEEP_ALIVE), () => encoder.encode(": keep-alive\n\n"))
    return yield* eventStream(gate, Stream.merge(events, keepAlive, { haltStrategy: "left" }))
  })
