import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Stream } from "effect"
import type { JobEvent, TextDelta } from "../domain/JobEvent"
import type { Principal } from "../domain/Principal"
import { eventStream } from "./EventStream"
import type { Gate } from "../gate/Gate"

const EVENT_STREAM = "text/event-stream"
const KEEP_ALIVE = Duration.seconds(15)
const encoder = new TextEncoder()

/** What a kind of job's service gives for its jobs' events to be read and followed, as the caller may see them (AgentRuns does). */
export interface FollowedJobs<E> {
  readonly get: (principal: Principal, id: string) => Effect.Effect<unknown, E>
  readonly events: (principal: Principal, id: string, afterSeq: number, limit: number) => Effect.Effect<ReadonlyArray<JobEvent>, E>
  readonly follow: (principal: Principal, id: string, afterSeq: number) => Stream.Stream<JobEvent | TextDelta, E>
}

/**
 * One server-sent event per job event, its seq the id a client resumes from with Last-Event-ID; the
 * job's streaming text as `text_delta` events without an id (they are not kept, so not resumed).
 */
const sse = (event: JobEvent | TextDelta) =>
  encoder.encode(
    !("seq" in event)
      ? `event: text_delta\ndata: ${JSON.stringify({ turn: event.turn, offset: event.offset, text: event.text })}\n\n`
      : `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify({ seq: event.seq, type: event.type, data: event.data, created_at: event.created_at })}\n\n`
  )

/** The seq a client resumes after: digits only (Number would take "1e3" for 1000 and skip events). */
export const lastEventId = (header: string | undefined) => (header !== undefined && /^\d{1,15}$/.test(header) ? Number(header) : undefined)

/**
 * A job's events as the caller asked for them: one JSON page, or with `Accept: text/event-stream`
 * a server-sent event stream that follows the job to its end, resumes from Last-Event-ID, keeps the
 * connection alive, and stops when the caller's credential does.
 */
export const runEventsResponse = <E extends { readonly code: string; readonly message: string }>(
  jobs: FollowedJobs<E>,
  gate: Gate,
  principal: Principal,
  jobId: string,
  params: { readonly after?: number | undefined; readonly limit?: number | undefined }
) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!(request.headers["accept"] ?? "").includes(EVENT_STREAM)) {
      return HttpServerResponse.unsafeJson({ items: yield* jobs.events(principal, jobId, params.after ?? 0, params.limit ?? 200) })
    }
    yield* jobs.get(principal, jobId)
    const after = lastEventId(request.headers["last-event-id"]) ?? params.after ?? 0
    // A failure mid-stream is the stream's last event; the client reconnects with Last-Event-ID.
    const events = Stream.map(jobs.follow(principal, jobId, after), sse)
    const keepAlive = Stream.map(Stream.tick(KEEP_ALIVE), () => encoder.encode(": keep-alive\n\n"))
    return yield* eventStream(gate, Stream.merge(events, keepAlive, { haltStrategy: "left" }))
  })
