import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { RateLimits } from "../../layers/RateLimits"
import { SluiceApi } from "../api/Api"
import { Authentication } from "../api/Authentication"
import { endpointPolicies, policyKey } from "../api/EndpointPolicies"
import { Forbidden, InsufficientScope, Unauthenticated } from "../domain/Errors"
import { Authenticator } from "../services/Authenticator"
import { type RequestInfo, RequestState } from "./RequestState"

const BEARER = /^bearer\s+(.+)$/i

/** The credential from `x-api-key` or `Authorization: Bearer`; a non-Bearer Authorization is refused. */
export const readToken = (headers: Readonly<Record<string, string | undefined>>) => {
  const apiKey = headers["x-api-key"]?.trim()
  if (apiKey) return Effect.succeed(apiKey)
  const authorization = headers["authorization"]
  if (authorization === undefined) return Effect.succeed(null)
  const match = BEARER.exec(authorization.trim())
  return match
    ? Effect.succeed(match[1]!.trim())
    : Effect.fail(new Unauthenticated({ message: "Authorization must use the Bearer scheme: Authorization: Bearer <key>" }))
}

/** Authenticates the request's credential again, as the middleware did: for a response that outlives the first check (a stream). */
export const reauthenticate = (authenticator: Authenticator) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const state = yield* Effect.serviceOption(RequestState)
    const token = yield* readToken(request.headers)
    const localPeer = Option.exists(state, (info) => info.client.local)
    return authenticator.authenticate({ token, localPeer })
  })

/** A refused credential's audit row goes to the org its key belongs (or belonged) to, when the store knows it. */
export const attributeRefusal = (authenticator: Authenticator, info: RequestInfo, token: string | null) =>
  Effect.map(authenticator.orgOfRefused(token), (org) => {
    if (org !== null) info.attributedOrg = org
  })

/**
 * Request path steps 2–4: per-IP limit, credential → principal, the endpoint's declared scope
 * (an endpoint without one is refused), then per-key and per-org limits on expensive routes.
 */
export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const authenticator = yield* Authenticator
    const limits = yield* RateLimits
    const policies = endpointPolicies(SluiceApi)

    return Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { route } = yield* HttpRouter.RouteContext
      const state = yield* Effect.serviceOption(RequestState)
      const policy = policies.get(policyKey(route.method, route.path))
      if (policy === undefined || policy.scope === null || Option.isNone(state)) {
        return yield* new Forbidden({ message: "This endpoint declares no scope and is refused" })
      }
      const info = state.value
      yield* limits.perIp(policy.rateClass, info.client.ip ?? "unknown")
      const token = yield* readToken(request.headers)
      const principal = yield* authenticator.authenticate({ token, localPeer: info.client.local }).pipe(Effect.tapError(() => attributeRefusal(authenticator, info, token)))
      info.principal = principal
      const scope = policy.scope
      if (scope !== "authenticated" && !principal.scopes.includes(scope)) {
        return yield* new InsufficientScope({ message: `This endpoint needs the ${scope} scope`, required_scope: scope })
      }
      if (policy.rateClass === "expensive") yield* limits.perPrincipal(principal)
      return principal
    })
  })
)
