import type { IncomingMessage, ServerResponse } from "node:http"
import { HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Either, Exit, Option, Schema } from "effect"
import { SluiceApi } from "../api/Api"
import { endpointPolicies, policyKey } from "../api/EndpointPolicies"
import { NDJSON, QueryRequest } from "../domain/Query"
import type { Principal } from "../domain/Principal"
import { Queries } from "../services/Queries"
import { Gate } from "./Gate"
import { type FastRequest, type HandOff, jsonPost, failureResponse, makeFastAnswers, readJsonBody } from "./FastAnswers"
import type { RequestPipeline } from "./RequestPipeline"
import { queryDraft } from "./RequestState"

const QUERY_ROUTE = /^\/api\/query(?:\?|$)/
const decodeQuery = Schema.decodeUnknownEither(QueryRequest)

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
    const answers = yield* makeFastAnswers(pipeline)
    const policy = endpointPolicies(SluiceApi).get(policyKey("POST", "/api/query"))
    const scope = policy?.scope
    if (policy === undefined || scope === null || scope === undefined) return undefined

    /** How a request the gate let through is answered: in plain code where everything it needs is in memory, else by the route's one effect. */
    const answer = (at: FastRequest, payload: QueryRequest, principal: Principal) => {
      const change = pipeline.changeRecordOf(at.line, at.info, at.started)
      const draft = queryDraft(at.info, payload.connection_name, payload.sql)
      const plain = answers.plainly(at, change, (settled) =>
        queries.runNow(principal, payload, { surface: "rest", requestId: draft.requestId, report: draft.reportNow }, (exit, held) =>
          settled(() => {
            if (Exit.isSuccess(exit)) return HttpServerResponse.unsafeJson(exit.value)
            const failure = Cause.failureOption(exit.cause)
            return Option.isNone(failure) ? exit.cause : failureResponse(failure.value)
          }, held)
        )
      )
      if (plain) return
      const route = queries.run(principal, payload, { surface: "rest", requestId: draft.requestId, report: draft.report }).pipe(
        // Written as it is: every field is JSON already, as the Effect app's route writes it.
        Effect.map((result) => HttpServerResponse.unsafeJson(result)),
        Effect.catchAll((error) => Effect.succeed(failureResponse(error)))
      )
      answers.byEffect(at, change, route)
    }

    /**
     * Takes `POST /api/query` with a JSON body of a declared length from a caller whose key, scope
     * and limits this replica can admit from memory (looked at, not counted, before the body is
     * read: a made-up key is the Effect app's to refuse from the headers); false leaves it
     * untouched. The Host is the caller's to check.
     */
    return (request: IncomingMessage, response: ServerResponse, handOff: HandOff): boolean => {
      const post = jsonPost(request, QUERY_ROUTE)
      if (post === undefined) return false
      const { line, length } = post
      const headers = request.headers
      if ((headers["accept"] ?? "").includes(NDJSON)) return false
      const info = pipeline.draftOf(line, request.socket.remoteAddress ?? null)
      if (gate.admitNow(info, line.headers, policy.rateClass, scope, false) === undefined) return false
      const at: FastRequest = { line, response, info, started: performance.now() }
      readJsonBody(
        request,
        length,
        handOff,
        (parsed, body) => {
          const payload = decodeQuery(parsed)
          if (Either.isLeft(payload)) return handOff(request, body)
          const principal = gate.admitNow(info, line.headers, policy.rateClass, scope)
          if (principal === undefined) return handOff(request, body)
          answer(at, payload.right, principal)
        },
        () =>
          answers.leftMidBody(
            at,
            Effect.flatMap(gate.admit(info, line.headers, policy.rateClass), (principal) => gate.authorize(principal, scope, "POST /api/query", policy.rateClass === "expensive"))
          ),
        (error) => answers.defect(at, error)
      )
      return true
    }
  })
