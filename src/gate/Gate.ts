import { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { type RateClass, RateLimits } from "../../layers/RateLimits"
import type { ScopeRequirement } from "../api/Annotations"
import { InsufficientScope, Unauthenticated } from "../domain/Errors"
import type { Principal } from "../domain/Principal"
import type { Scope } from "../domain/Scope"
import { Authenticator } from "../services/Authenticator"
import { type RequestInfo, RequestState } from "./RequestState"

const BEARER = /^bearer\s+(.+)$/i

/** The credential from `x-api-key` or `Authorization: Bearer`; a non-Bearer Authorization is refused. */
const readToken = (headers: Readonly<Record<string, string | undefined>>) => {
  const apiKey = headers["x-api-key"]?.trim()
  if (apiKey) return Effect.succeed(apiKey)
  const authorization = headers["authorization"]
  if (authorization === undefined) return Effect.succeed(null)
  const match = BEARER.exec(authorization.trim())
  return match
    ? Effect.succeed(match[1]!.trim())
    : Effect.fail(new Unauthenticated({ message: "Authorization must use the Bearer scheme: Authorization: Bearer <key>" }))
}

/**
 * The one gate of every surface (REST under /api and MCP at /mcp): the per-IP limit, the credential
 * (API key, session token or local access, as the Authenticator decides), the scope the endpoint or
 * tool declares, and the per-key and per-org limits.
 */
export class Gate extends Effect.Service<Gate>()("sluice/Gate", {
  effect: Effect.gen(function* () {
    const authenticator = yield* Authenticator
    const limits = yield* RateLimits

    /** Who calls: the per-IP limit of the rate class, then the credential; a refused one's audit row goes to the org its key belongs to, when the store knows. */
    const admit = (info: RequestInfo, headers: Readonly<Record<string, string | undefined>>, rateClass: RateClass, surface?: "mcp") =>
      Effect.gen(function* () {
        yield* limits.perIp(rateClass, info.client.ip ?? "unknown")
        const token = yield* readToken(headers)
        const principal = yield* authenticator.authenticate({ token, localPeer: info.client.local, ...(surface === undefined ? {} : { surface }) }).pipe(
          Effect.tapError(() =>
            Effect.map(authenticator.orgOfRefused(token), (org) => {
              if (org !== null) info.attributedOrg = org
            })
          )
        )
        info.principal = principal
        return principal
      })

    /** What the caller may do here: the declared scope (fail closed), then the per-key and per-org limits for work that costs. */
    const authorize = (principal: Principal, scope: ScopeRequirement, what: string, costly: boolean) =>
      Effect.gen(function* () {
        const anyOf: ReadonlyArray<Scope> = scope === "authenticated" ? [] : typeof scope === "string" ? [scope] : scope
        if (anyOf.length > 0 && !anyOf.some((s) => principal.scopes.includes(s))) {
          return yield* new InsufficientScope({ message: `${what} needs the ${anyOf.join(" or ")} scope`, required_scope: anyOf[0]! })
        }
        if (costly) yield* limits.perPrincipal(principal)
      })

    /** The request's credential checked again, for a response that outlives the first check (a stream). */
    const recheck = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const state = yield* Effect.serviceOption(RequestState)
      const localPeer = Option.exists(state, (info) => info.client.local)
      return Effect.flatMap(readToken(request.headers), (token) => authenticator.authenticate({ token, localPeer }))
    })

    return { admit, authorize, recheck } as const
  }),
  dependencies: [Authenticator.Default, RateLimits.Default]
}) {}
