import { HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { credentialLost } from "../services/Queries"
import type { Gate } from "../gate/Gate"

const encoder = new TextEncoder()

/**
 * A server-sent event stream that holds only while the request's credential does: it is checked
 * again every second (a key deleted or expired meanwhile ends it), and any failure, that one
 * included, is the stream's last event, `error` with its code and message. Every event stream
 * the gateway serves is this.
 */
export const eventStream = <E extends { readonly code: string; readonly message: string }>(gate: Gate, events: Stream.Stream<Uint8Array, E>) =>
  Effect.map(gate.recheck, (recheck) =>
    HttpServerResponse.stream(
      events.pipe(
        Stream.interruptWhen(credentialLost(recheck)),
        Stream.catchAll((error) => Stream.make(encoder.encode(`event: error\ndata: ${JSON.stringify({ code: error.code, message: error.message })}\n\n`)))
      ),
      { contentType: "text/event-stream", headers: { "cache-control": "no-store", "x-accel-buffering": "no" } }
    )
  )
