import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { SluiceApi } from "../api/Api"
import { Authentication } from "../api/Authentication"
import { endpointPolicies, policyKey } from "../api/EndpointPolicies"
import { Forbidden, InvalidRequest } from "../domain/Errors"
import { Gate } from "../gate/Gate"
import { MAX_JSON_NESTING, nestsDeeperThan } from "../gate/JsonNesting"
import { RequestState } from "../gate/RequestState"

/**
 * The REST side of the gate: the endpoint's declared policy (an endpoint without a scope is
 * refused), then the gate's steps, then (for the admitted only) a JSON body's nesting.
 */
export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const gate = yield* Gate
    const policies = endpointPolicies(SluiceApi)

    return Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { route } = yield* HttpRouter.RouteContext
      const state = yield* Effect.serviceOption(RequestState)
      const policy = policies.get(policyKey(route.method, route.path))
      if (policy === undefined || policy.scope === null || Option.isNone(state)) {
        return yield* new Forbidden({ message: "This endpoint declares no scope and is refused" })
      }
      const principal = yield* gate.admit(state.value, request.headers, policy.rateClass)
      yield* gate.authorize(principal, policy.scope, "This endpoint", policy.rateClass === "expensive")
      // Read once here (the handler's decoding reuses it); a body that cannot be read is the handler's to refuse.
      if ((request.headers["content-type"] ?? "").includes("application/json")) {
        const body = yield* Effect.option(request.text)
        if (Option.exists(body, (text) => nestsDeeperThan(text, MAX_JSON_NESTING))) {
          return yield* new InvalidRequest({ message: `The JSON body nests deeper than ${MAX_JSON_NESTING} levels` })
        }
      }
      return principal
    })
  })
)
