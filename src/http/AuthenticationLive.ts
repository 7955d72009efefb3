import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { SluiceApi } from "../api/Api"
import { Authentication } from "../api/Authentication"
import { endpointPolicies, policyKey } from "../api/EndpointPolicies"
import { Forbidden } from "../domain/Errors"
import { Gate } from "./Gate"
import { RequestState } from "./RequestState"

/** The REST side of the gate: the endpoint's declared policy (an endpoint without a scope is refused), then the gate's steps. */
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
      return principal
    })
  })
)
