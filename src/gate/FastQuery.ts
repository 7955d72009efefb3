import type { IncomingMessage, ServerResponse } from "node:http"
import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Either, Exit, FiberId, Option, Runtime, Schema } from "effect"
import { SluiceApi } from "../api/Api"
import { endpointPolicies, policyKey } from "../api/EndpointPolicies"
import { NDJSON, QueryRequest } from "../domain/Query"
import type { Principal } from "../domain/Principal"
import { type ChangeRecord, PendingChange } from "../repos/ChangeRecord"
import { Queries } from "../services/Queries"
import { declaresJson } from "./BodyHeaders"
import { Gate } from "./Gate"
import { MAX_JSON_NESTING, nestsDeeperThan } from "./JsonNesting"
import { bodyLimitOf, errorResponse, type RequestLine, type RequestPipeline } from "./RequestPipeline"
import { queryDraft, type RequestInfo } from "./RequestState"

const QUERY_ROUTE = /^\/api\/query(?:\?|$)/
const decodeQuery = Schema.decodeUnknownEither(QueryRequest)

/** Where the fast lane leaves a request it has read the body of: the Effect app, given the body again. */
export type HandOff = (request: IncomingMessage, body: Buffer) => void

/** A typed failure as the Effect app's endpoint sends it: its class's status, its fields without the tag. */
const failureResponse = (error: { readonly code: string; readonly message: string }) => {
  const schema = error.constructor as unknown as Schema.Schema<unknown, Record<string, unknown>>
  const encoded = Either.getOrUndefined(Schema.encodeUnknownEither(schema)(error))
  if (encoded === undefined || typeof schema.ast !== "object") return errorResponse(500, "internal_error", "Internal error")
  const { code, message, ...extra } = encoded
  return errorResponse(HttpApiSchema.getStatus(schema.ast, 500), String(code), String(message), extra)
}

/** How an answer that did not come from the route ends: a client that left (499, as the platform says it), or a defect (500). */
const causeResponse = (cause: Cause.Cause<unknown>) =>
  Cause.isInterruptedOnly(cause) ? HttpServerResponse.empty({ status: 499 }) : HttpServerResponse.empty({ status: 500 })

/** Writes the pipeline's response as the platform writes a buffered one. */
const write = (response: ServerResponse, answer: HttpServerResponse.HttpServerResponse) => {
  if (response.writableEnded || response.destroyed) return
  const body = answer.body
  if (body._tag === "Uint8Array") return void response.writeHead(answer.status, answer.headers).end(body.body)
  if (body._tag === "Empty") return void response.writeHead(answer.status, answer.headers).end()
  response.destroy()
}

/**
 * `POST /api/query` answered as JSON on the fast lane (issue 28): the same gate, query service and
 * pipeline as the Effect app's route, driven without the router, the platform's request and its
 * schema-per-step work. The gate is decided from memory (a key verified on this replica, limits
 * counted in this process); a request it cannot decide there, a body that does not decode, or a
 * streamed answer is left to the Effect app before anything is counted or recorded.
 */
export const makeFastQuery = (pipeline: RequestPipeline) =>
  Effect.gen(function* () {
    const gate = yield* Gate
    const queries = yield* Queries
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const policy = endpointPolicies(SluiceApi).get(policyKey("POST", "/api/query"))
    const scope = policy?.scope
    if (policy === undefined || scope === null || scope === undefined) return undefined

    /** The Effect app's finish, for an answer whose audit row `finishNow` cannot write; `send` gets what it makes, or a bare 500 if it fails. */
    const finishByEffect = (line: RequestLine, info: RequestInfo, started: number, raw: HttpServerResponse.HttpServerResponse, change: ChangeRecord | null, send: (answer: HttpServerResponse.HttpServerResponse) => void) =>
      runFork(pipeline.finish(line, info, started, raw, change)).addObserver((exit) => send(Exit.isSuccess(exit) ? exit.value : HttpServerResponse.empty({ status: 500 })))

    /** How a request the gate let through is answered: in plain code where everything it needs is in memory, else by the route's one effect. */
    const answer = (line: RequestLine, response: ServerResponse, payload: QueryRequest, started: number, principal: Principal, info: RequestInfo) => {
      const change = pipeline.changeRecordOf(line, info, started)
      const draft = queryDraft(info, payload.connection_name, payload.sql)
      let finished = false
      // The result's share of the result memory, given back once its response is written (as the Effect app's scope does).
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
          if (info.answered) return send(HttpServerResponse.empty({ status: 500 }))
        }
        finishByEffect(line, info, started, raw, change, send)
      }
      const failed = (cause: Cause.Cause<unknown>) => {
        runFork(Effect.logError("request failed", cause))
        finish(causeResponse(cause))
      }
      let giveUp: (() => void) | undefined
      // Set once the result is in: a client leaving after that changes nothing (its answer is being recorded and written, as in the Effect app).
      let resulted = false
      const left = () => {
        if (finished || resulted || response.writableEnded) return
        giveUp?.()
        finish(causeResponse(Cause.interrupt(FiberId.none)))
      }
      giveUp = queries.runNow(principal, payload, { surface: "rest", requestId: draft.requestId, report: draft.reportNow }, (exit, held) => {
        resulted = true
        release = held
        let raw: HttpServerResponse.HttpServerResponse
        try {
          if (Exit.isSuccess(exit)) raw = HttpServerResponse.unsafeJson(exit.value)
          else {
            const failure = Cause.failureOption(exit.cause)
            if (Option.isNone(failure)) return failed(exit.cause)
            raw = failureResponse(failure.value)
          }
        } catch (error) {
          return failed(Cause.die(error))
        }
        finish(raw)
      })
      // Something is not in memory (a connection's first query, a budget, a pool to open): the route's own effect, which fills the caches.
      if (giveUp === undefined) return answerByEffect(line, response, payload, started, principal, info, change, draft)
      if (!finished) response.once("close", left)
    }

    const answerByEffect = (
      line: RequestLine,
      response: ServerResponse,
      payload: QueryRequest,
      started: number,
      principal: Principal,
      info: RequestInfo,
      change: ChangeRecord | null,
      draft: ReturnType<typeof queryDraft>
    ) => {
      const route = queries.run(principal, payload, { surface: "rest", requestId: draft.requestId, report: draft.report }).pipe(
        // Written as it is: every field is JSON already, as the Effect app's route writes it.
        Effect.map((result) => HttpServerResponse.unsafeJson(result)),
        Effect.catchAll((error) => Effect.succeed(failureResponse(error))),
        (run) => (change === null ? run : Effect.provideService(run, PendingChange, change))
      )
      const answered = Effect.uninterruptibleMask((restore) =>
        restore(route).pipe(
          Effect.catchAllCause((cause) =>
            Effect.as(Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("request failed", cause), causeResponse(cause))
          ),
          Effect.flatMap((raw) => pipeline.finish(line, info, started, raw, change)),
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
        if (Exit.isSuccess(exit)) write(response, exit.value)
        else if (!response.headersSent) write(response, HttpServerResponse.empty({ status: 500 }))
      })
    }

    /** Decides on a request whose body has been read: answers it, or hands it off untouched. */
    const decided = (request: IncomingMessage, response: ServerResponse, line: RequestLine, info: RequestInfo, body: Buffer, started: number, handOff: HandOff) => {
      const text = body.toString("utf8")
      if (nestsDeeperThan(text, MAX_JSON_NESTING)) return handOff(request, body)
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        return handOff(request, body)
      }
      const payload = decodeQuery(parsed)
      if (Either.isLeft(payload)) return handOff(request, body)
      const principal = gate.admitNow(info, line.headers, policy.rateClass, scope)
      if (principal === undefined) return handOff(request, body)
      answer(line, response, payload.right, started, principal, info)
    }

    /**
     * Takes `POST /api/query` with a JSON body of a declared length from a caller whose key, scope
     * and limits this replica can admit from memory (looked at, not counted, before the body is
     * read: a made-up key is the Effect app's to refuse from the headers); false leaves it
     * untouched. The Host is the caller's to check.
     */
    return (request: IncomingMessage, response: ServerResponse, handOff: HandOff): boolean => {
      const headers = request.headers
      if (request.method !== "POST" || !QUERY_ROUTE.test(request.url ?? "")) return false
      const length = Number(headers["content-length"])
      const line: RequestLine = { method: "POST", url: request.url!, headers: headers as Record<string, string | undefined> }
      if (!(length > 0 && length <= bodyLimitOf(line)) || headers["transfer-encoding"] !== undefined || !declaresJson(headers)) return false
      if ((headers["accept"] ?? "").includes(NDJSON)) return false
      const info = pipeline.draftOf(line, request.socket.remoteAddress ?? null)
      if (gate.admitNow(info, line.headers, policy.rateClass, scope, false) === undefined) return false
      const started = performance.now()
      const chunks: Array<Buffer> = []
      let read = 0
      // A client that leaves mid-body has asked for nothing: its request ends here, unrecorded, as it would in the Effect app.
      request.on("error", () => {})
      request.on("data", (chunk: Buffer) => {
        read += chunk.length
        if (read <= length) chunks.push(chunk)
      })
      request.once("end", () => {
        try {
          decided(request, response, line, info, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), started, handOff)
        } catch (error) {
          // A fault here is a defect, answered as the Effect app answers one: the process goes on, and a request the gate admitted is enveloped, counted and recorded.
          runFork(Effect.logError("request failed", Cause.die(error)))
          const bare500 = HttpServerResponse.empty({ status: 500 })
          if (info.principal !== null && !info.answered) finishByEffect(line, info, started, bare500, null, (answer) => write(response, answer))
          else if (!response.headersSent) write(response, bare500)
        }
      })
      return true
    }
  })
