import type { IncomingMessage, ServerResponse } from "node:http"
import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Either, Exit, FiberId, Runtime, Schema, type Scope } from "effect"
import type { ChangeRecord } from "../repos/ChangeRecord"
import { PendingChange } from "../repos/ChangeRecord"
import { MAX_JSON_NESTING, nestsDeeperThan } from "./JsonNesting"
import { declaresJson } from "./BodyHeaders"
import { bodyLimitOf, errorResponse, type RequestLine, type RequestPipeline } from "./RequestPipeline"
import type { RequestInfo } from "./RequestState"

/** Where the fast lane leaves a request it has read the body of: the Effect app, given the body again. */
export type HandOff = (request: IncomingMessage, body: Buffer) => void

/** A route the fast lane serves beyond /health: true where it took the request (answering it, or handing it off once it has read its body). */
export type FastRoute = (request: IncomingMessage, response: ServerResponse, handOff: HandOff) => boolean

/** What a request on the fast lane is, once its head has been looked at. */
export interface FastRequest {
  readonly line: RequestLine
  readonly response: ServerResponse
  readonly info: RequestInfo
  readonly started: number
}

/** How an answer that did not come from the route ends: a client that left (499, as the platform says it), or a defect (500). */
const causeResponse = (cause: Cause.Cause<unknown>) =>
  Cause.isInterruptedOnly(cause) ? HttpServerResponse.empty({ status: 499 }) : HttpServerResponse.empty({ status: 500 })

/** A typed failure as the Effect app's endpoint sends it: its class's status, its fields without the tag. */
export const failureResponse = (error: { readonly code: string; readonly message: string }) => {
  const schema = error.constructor as unknown as Schema.Schema<unknown, Record<string, unknown>>
  const encoded = Either.getOrUndefined(Schema.encodeUnknownEither(schema)(error))
  if (encoded === undefined || typeof schema.ast !== "object") return errorResponse(500, "internal_error", "Internal error")
  const { code, message, ...extra } = encoded
  return errorResponse(HttpApiSchema.getStatus(schema.ast, 500), String(code), String(message), extra)
}

const bare500 = () => HttpServerResponse.empty({ status: 500 })

/** Writes the pipeline's response as the platform writes a buffered one. */
const write = (response: ServerResponse, answer: HttpServerResponse.HttpServerResponse) => {
  if (response.writableEnded || response.destroyed) return
  const body = answer.body
  if (body._tag === "Uint8Array") return void response.writeHead(answer.status, answer.headers).end(body.body)
  if (body._tag === "Empty") return void response.writeHead(answer.status, answer.headers).end()
  response.destroy()
}

/** A POST to `route` with a JSON body of a declared length within its cap, not chunked: its line and length; undefined for anything else. */
export const jsonPost = (request: IncomingMessage, route: RegExp) => {
  const headers = request.headers
  if (request.method !== "POST" || !route.test(request.url ?? "")) return undefined
  const length = Number(headers["content-length"])
  const line: RequestLine = { method: "POST", url: request.url!, headers: headers as Record<string, string | undefined> }
  if (!(length > 0 && length <= bodyLimitOf(line)) || headers["transfer-encoding"] !== undefined || !declaresJson(headers)) return undefined
  return { line, length }
}

/**
 * Reads a body of a declared `length` and gives it to `decided` as JSON, or hands the request off
 * (a body that is not JSON, or nests too deep) with the body it read. A client that leaves before
 * its body has come is `left`'s (the Effect app has admitted and counted it by then, and records it
 * as 499). A fault in `decided` or `left` is `faulted`'s.
 */
export const readJsonBody = (
  request: IncomingMessage,
  length: number,
  handOff: HandOff,
  decided: (parsed: unknown, body: Buffer) => void,
  left: () => void,
  faulted: (error: unknown) => void
) => {
  const chunks: Array<Buffer> = []
  let read = 0
  let ended = false
  request.on("error", () => {})
  request.on("data", (chunk: Buffer) => {
    read += chunk.length
    if (read <= length) chunks.push(chunk)
  })
  request.once("close", () => {
    if (ended) return
    try {
      left()
    } catch (error) {
      faulted(error)
    }
  })
  request.once("end", () => {
    ended = true
    try {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
      const text = body.toString("utf8")
      if (nestsDeeperThan(text, MAX_JSON_NESTING)) return handOff(request, body)
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        return handOff(request, body)
      }
      decided(parsed, body)
    } catch (error) {
      faulted(error)
    }
  })
}

/**
 * How the fast lane's routes answer a request the gate admitted, with the pipeline's envelope,
 * metrics and audit rows: in plain code where the work can be (`plainly`), else by one effect
 * (`byEffect`), and a defect as the Effect app answers one.
 */
export const makeFastAnswers = (pipeline: RequestPipeline) =>
  Effect.gen(function* () {
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())

    /** The Effect app's finish, for an answer whose audit row `finishNow` cannot write; `send` gets what it makes, or a bare 500 if it fails. */
    const finishByEffect = (at: FastRequest, raw: HttpServerResponse.HttpServerResponse, change: ChangeRecord | null, send: (answer: HttpServerResponse.HttpServerResponse) => void) =>
      runFork(pipeline.finish(at.line, at.info, at.started, raw, change)).addObserver((exit) => send(Exit.isSuccess(exit) ? exit.value : bare500()))

    /**
     * Starts plain work with `start`, which calls `settled` once with the answer (a response to
     * finish, or the cause of a defect) and the function that gives back what the answer holds
     * (called once its response is written), and returns how to give the work up (its client left);
     * undefined where it cannot run plainly, with nothing done: then false.
     */
    const plainly = (
      at: FastRequest,
      change: ChangeRecord | null,
      start: (settled: (answer: () => HttpServerResponse.HttpServerResponse | Cause.Cause<unknown>, held: () => void) => void) => (() => void) | undefined
    ): boolean => {
      const { line, response, info, started } = at
      let finished = false
      // The answer's share of the result memory, given back once its response is written (as the Effect app's scope does).
      let release = () => {}
      const send = (answer: HttpServerResponse.HttpServerResponse) => {
        finished = true
        response.off("close", left)
        try {
          write(response, answer)
        } finally {
          release()
        }
      }
      // The same finish as the Effect app's, plain where it can be; a fault in it is answered as the Effect app answers a defect.
      const finish = (raw: HttpServerResponse.HttpServerResponse) => {
        try {
          if (pipeline.finishNow(line, info, started, raw, change, send)) return
        } catch (error) {
          runFork(Effect.logError("request failed", Cause.die(error)))
          if (info.answered) return send(bare500())
        }
        finishByEffect(at, raw, change, send)
      }
      const failed = (cause: Cause.Cause<unknown>) => {
        runFork(Effect.logError("request failed", cause))
        finish(causeResponse(cause))
      }
      let giveUp: (() => void) | undefined
      // Set once the answer is in: a client leaving after that changes nothing (its answer is being recorded and written, as in the Effect app).
      let settledAlready = false
      const left = () => {
        if (finished || settledAlready || response.writableEnded) return
        giveUp?.()
        finish(causeResponse(Cause.interrupt(FiberId.none)))
      }
      giveUp = start((answer, held) => {
        settledAlready = true
        release = held
        let raw: HttpServerResponse.HttpServerResponse | Cause.Cause<unknown>
        try {
          raw = answer()
        } catch (error) {
          raw = Cause.die(error)
        }
        if (Cause.isCause(raw)) failed(raw)
        else finish(raw)
      })
      if (giveUp === undefined) return false
      if (!finished) response.once("close", left)
      return true
    }

    /** The answer as one effect (what is not in memory: a connection's first query, a budget, a pool to open), which fills the caches; its resources are held until it is written. */
    const byEffect = (at: FastRequest, change: ChangeRecord | null, route: Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope>) => {
      const { line, response, info, started } = at
      const run = change === null ? route : Effect.provideService(route, PendingChange, change)
      const answered = Effect.uninterruptibleMask((restore) =>
        restore(run).pipe(
          Effect.catchAllCause((cause) => Effect.as(Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("request failed", cause), causeResponse(cause))),
          Effect.flatMap((raw) => pipeline.finish(line, info, started, raw, change)),
          // Written before the scope closes: what the answer holds (its result memory) is given back once it is written, as in the Effect app.
          Effect.tap((answer) => Effect.sync(() => write(response, answer))),
          Effect.scoped
        )
      )
      const fiber = runFork(answered)
      const left = () => {
        if (!response.writableEnded) fiber.unsafeInterruptAsFork(fiber.id())
      }
      response.once("close", left)
      fiber.addObserver((exit) => {
        response.off("close", left)
        if (Exit.isFailure(exit) && !response.headersSent) write(response, bare500())
      })
    }

    /**
     * A request whose client left before its body came: admitted by `admit` (the route's own
     * admission, counted, as the Effect app admits before it reads a body) and recorded as the
     * Effect app records it, 499, or the admission's refusal; nothing is written.
     */
    const leftMidBody = (at: FastRequest, admit: Effect.Effect<unknown, { readonly code: string; readonly message: string }>) =>
      void runFork(
        admit.pipe(
          Effect.as(HttpServerResponse.empty({ status: 499 })),
          Effect.catchAll((error) => Effect.succeed(failureResponse(error))),
          Effect.flatMap((raw) => pipeline.finish(at.line, at.info, at.started, raw, null))
        )
      )

    /** A fault met before an answer was under way: answered as the Effect app answers a defect, and a request the gate admitted is enveloped, counted and recorded. */
    const defect = (at: FastRequest, error: unknown) => {
      runFork(Effect.logError("request failed", Cause.die(error)))
      if (at.info.principal !== null && !at.info.answered) finishByEffect(at, bare500(), null, (answer) => write(at.response, answer))
      else if (!at.response.headersSent) write(at.response, bare500())
    }

    return { plainly, byEffect, leftMidBody, defect } as const
  })

export type FastAnswers = Effect.Effect.Success<ReturnType<typeof makeFastAnswers>>
