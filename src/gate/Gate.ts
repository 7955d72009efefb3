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

/** The credential from `x-api-key` or `Authorization: Bearer`: null for none, undefined where an Authorization is not Bearer (refused). */
export const credentialOf = (headers: Readonly<Record<string, string | undefined>>): string | null | undefined => {
  const apiKey = headers["x-api-key"]?.trim()
  if (apiKey) return apiKey
  const authorization = headers["authorization"]
  if (authorization === undefined) return null
  const match = BEARER.exec(authorization.trim())
  return match ? match[1]!.trim() : undefined
}

const readToken = (headers: Readonly<Record<string, string | undefined>>) => {
  const token = credentialOf(headers)
  return token !== undefined
    ? Effect.succeed(token)
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

    /** Who calls, as `authenticate` decides (a credential the request carries in its own way), after the per-IP limit of the rate class. */
    const admitWith = <E>(info: RequestInfo, rateClass: RateClass, authenticate: Effect.Effect<Principal, E>) =>
      Effect.gen(function* () {
        yield* limits.perIp(rateClass, info.client.ip ?? "unknown")
        const principal = yield* authenticate
        info.principal = principal
        return principal
      })

    /** Who calls: the per-IP limit of the rate class, then the credential; a refused one's audit row goes to the org its key belongs to, when the store knows. */
    const admit = (info: RequestInfo, headers: Readonly<Record<string, string | undefined>>, rateClass: RateClass, surface?: "mcp" | "notebook") =>
      admitWith(
        info,
        rateClass,
        Effect.flatMap(readToken(headers), (token) =>
          authenticator.authenticate({ token, localPeer: info.client.local, ...(surface === undefined ? {} : { surface }) }).pipe(
            Effect.tapError(() =>
              Effect.map(authenticator.orgOfRefused(token), (org) => {
                if (org !== null) info.attributedOrg = org
              })
            )
          )
        )
      )

    const permits = (principal: Principal, scope: ScopeRequirement): ReadonlyArray<Scope> | undefined => {
      const anyOf: ReadonlyArray<Scope> = scope === "authenticated" ? [] : typeof scope === "string" ? [scope] : scope
      return anyOf.length > 0 && !anyOf.some((s) => principal.scopes.includes(s)) ? anyOf : undefined
    }

    /** What the caller may do here: the declared scope (fail closed), then the per-key and per-org limits for work that costs. */
    const authorize = (principal: Principal, scope: ScopeRequirement, what: string, costly: boolean) =>
      Effect.gen(function* () {
        const missing = permits(principal, scope)
        if (missing !== undefined) {
          return yield* new InsufficientScope({ message: `${what} needs the ${missing.join(" or ")} scope`, required_scope: missing[0]! })
        }
        if (costly) yield* limits.perPrincipal(principal)
      })

    /**
     * `admit` and `authorize` decided from what this replica holds in memory, without an effect: the
     * principal where an API key verified here opens the request and every limit has room (each is
     * then counted, unless `count` is false: a look before a body is read; the per-key limits where
     * `principalLimited`, as `authorize` counts them for costly work); undefined, with nothing
     * counted or recorded, where only the effects can tell, a refusal included.
     */
    const admitNow = (
      info: RequestInfo,
      headers: Readonly<Record<string, string | undefined>>,
      rateClass: RateClass,
      scope: ScopeRequirement,
      count = true,
      principalLimited = rateClass === "expensive"
    ) => {
      const token = credentialOf(headers)
      if (token === null || token === undefined) return undefined
      const principal = authenticator.authenticateNow(token)
      if (principal === undefined || permits(principal, scope) !== undefined) return undefined
      if (!limits.admitNow(rateClass, info.client.ip ?? "unknown", principalLimited ? principal : null, count)) return undefined
      if (count) info.principal = principal
      return principal
    }

    /** The request's credential checked again, for a response that outlives the first check (a stream). */
    const recheck = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const state = yield* Effect.serviceOption(RequestState)
      const localPeer = Option.exists(state, (info) => info.client.local)
      return Effect.flatMap(readToken(request.headers), (token) => authenticator.authenticate({ token, localPeer }))
    })

    return { admit, admitWith, authorize, admitNow, recheck } as const
  }),
  dependencies: [Authenticator.Default, RateLimits.Default]
}) {}
