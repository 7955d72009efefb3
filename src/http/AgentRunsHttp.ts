import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Stream } from "effect"
import { SluiceApi } from "../api/Api"
import type { AgentRunEvent } from "../domain/AgentRun"
import { CurrentPrincipal } from "../domain/Principal"
import { AgentRuns } from "../services/AgentRuns"
import { credentialLost } from "../services/Queries"
import { Gate } from "./Gate"

const EVENT_STREAM = "text/event-stream"
const KEEP_ALIVE = Duration.seconds(15)
const encoder = new TextEncoder()

/** One server-sent event per run event: its seq as the id a client resumes from with Last-Event-ID. */
const sse = (event: AgentRunEvent) =>
  encoder.encode(`id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify({ seq: event.seq, type: event.type, data: event.data, created_at: event.created_at })}\n\n`)

const lastEventId = (header: string | undefined) => {
  const seq = Number(header)
  return header !== undefined && Number.isSafeInteger(seq) && seq >= 0 ? seq : undefined
}

export const AgentRunsHttp = HttpApiBuilder.group(SluiceApi, "agentRuns", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* AgentRuns
    const gate = yield* Gate
    return handlers
      .handle("start", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => runs.start(p, payload)))
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => runs.list(p, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => runs.get(p, path.id)))
      .handle("events", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const principal = yield* CurrentPrincipal
          const request = yield* HttpServerRequest.HttpServerRequest
          if (!(request.headers["accept"] ?? "").includes(EVENT_STREAM)) {
            return HttpServerResponse.unsafeJson({ items: yield* runs.events(principal, path.id, urlParams.after ?? 0, urlParams.limit ?? 200) })
          }
          yield* runs.get(principal, path.id)
          const recheck = yield* gate.recheck
          const after = lastEventId(request.headers["last-event-id"]) ?? urlParams.after ?? 0
          const events = runs.follow(principal, path.id, after).pipe(
            Stream.map(sse),
            Stream.interruptWhen(credentialLost(recheck)),
            // A failure mid-stream is the stream's last event; the client reconnects with Last-Event-ID.
            Stream.catchAll((error) => Stream.make(encoder.encode(`event: error\ndata: ${JSON.stringify({ code: error.code, message: error.message })}\n\n`)))
          )
          const keepAlive = Stream.map(Stream.tick(KEEP_ALIVE), () => encoder.encode(": keep-alive\n\n"))
          return HttpServerResponse.stream(Stream.merge(events, keepAlive, { haltStrategy: "left" }), {
            contentType: EVENT_STREAM,
            headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
          })
        })
      )
      .handle("update", ({ path, payload }) => Effect.flatMap(CurrentPrincipal, (p) => runs.patch(p, path.id, payload)))
  })
)
