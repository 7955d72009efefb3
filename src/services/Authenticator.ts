import { Effect, Option } from "effect"
import { createRemoteJWKSet, errors as JoseErrors, jwtVerify, type JWTPayload } from "jose"
import { AppConfig } from "../../layers/AppConfig"
import { InvalidApiKey, Unauthenticated, Unavailable } from "../domain/Errors"
import { LOCAL_ORG, LOCAL_USER, OrgId, UserId } from "../domain/Ids"
import { keyLimits, type Principal } from "../domain/Principal"
import { ALL_SCOPES, type Role, type Scope } from "../domain/Scope"
import type { KeyCredentialRow } from "../repos/ApiKeysRepo"
import { OrgsRepo } from "../repos/OrgsRepo"
import { ApiKeys } from "./ApiKeys"

export interface Credential {
  /** The value of `x-api-key`, or of `Authorization: Bearer`. */
  readonly token: string | null
  /** The direct peer is loopback and no proxy header claims another origin. */
  readonly localPeer: boolean
  /**
   * MCP: only API keys are accepted (a session token is refused), and a keyless client on this
   * machine is the local admin only until someone makes the first key. Notebook: never local access.
   * Git: API keys only, never local access (a git client sends its credential only when refused, so
   * keyless access would silently stand in for the key its user gave).
   */
  readonly surface?: "mcp" | "notebook" | "git"
}

/** Who acts with a usable API key: its org, user, scopes and role. */
export const keyPrincipal = (row: KeyCredentialRow & { readonly role: Role }): Principal => ({
  kind: "api_key",
  orgId: row.org_id,
  userId: row.user_id,
  keyId: row.id,
  keyPrefix: row.prefix,
  scopes: row.scopes,
  role: row.role,
  ...keyLimits(row)
})

const MEMBER_SESSION_SCOPES: ReadonlyArray<Scope> = ["read", "query", "write", "execute", "agent:run"]
const looksLikeJwt = (token: string) => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)
const isNetworkFailure = (error: unknown) =>
  error instanceof JoseErrors.JWKSTimeout || (error instanceof TypeError && /fetch/i.test(error.message))

/** Turns a credential into a principal: API key, cloud session JWT, or local loopback access. */
export class Authenticator extends Effect.Service<Authenticator>()("sluice/Authenticator", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const keys = yield* ApiKeys
    const orgs = yield* OrgsRepo
    const jwks = Option.map(config.jwksUrl, (url) => createRemoteJWKSet(url, { timeoutDuration: 5_000 }))

    const fromKey = (token: string) => Effect.map(keys.verify(token), keyPrincipal)

    const verifyJwt = (token: string) =>
      Effect.tryPromise({
        try: () =>
          jwtVerify(token, Option.getOrThrow(jwks), {
            clockTolerance: config.jwtLeewaySeconds,
            requiredClaims: ["exp", "sub"],
            ...Option.match(config.jwtIssuer, { onNone: () => ({}), onSome: (issuer) => ({ issuer }) }),
            ...Option.match(config.jwtAudience, { onNone: () => ({}), onSome: (audience) => ({ audience }) })
          }),
        catch: (error) =>
          isNetworkFailure(error)
            ? new Unavailable({ message: "The identity provider's keys cannot be fetched; try again shortly" })
            : new Unauthenticated({
                message: error instanceof JoseErrors.JWTExpired ? "The session token has expired" : "The session token is not valid"
              })
      })

    const fromJwt = Effect.fn("Authenticator.fromJwt")(function* (token: string) {
      const { payload } = yield* verifyJwt(token)
      const claims = payload as JWTPayload & { org_id?: unknown; org_role?: unknown }
      if (typeof claims.org_id !== "string" || claims.org_id.length === 0 || typeof claims.sub !== "string") {
        return yield* new Unauthenticated({ message: "The session token lacks the org_id or sub claim" })
      }
      const role: Role = claims.org_role === "org:admin" ? "admin" : "member"
      const orgId = OrgId.make(claims.org_id)
      const userId = UserId.make(claims.sub)
      // Written on every session request so a role change in the identity provider reaches the user's keys.
      const changed = yield* orgs.ensureMember({ orgId, orgName: orgId, userId, role })
      if (changed) yield* keys.forgetVerified
      return {
        kind: "jwt",
        orgId,
        userId,
        keyId: null,
        keyPrefix: null,
        scopes: role === "admin" ? ALL_SCOPES : MEMBER_SESSION_SCOPES,
        role
      } satisfies Principal
    })

    const local: Principal = {
      kind: "local",
      orgId: LOCAL_ORG,
      userId: LOCAL_USER,
      keyId: null,
      keyPrefix: null,
      scopes: ALL_SCOPES,
      role: "admin"
    }

    const keyRequired = Effect.fail(new Unauthenticated({ message: "An API key is required: send it as x-api-key or Authorization: Bearer" }))

    /** Local access, decided here for every surface: keyless, from this machine, when SP_LOCAL_ACCESS allows it. */
    const localAdmin = (credential: Credential) => {
      // A notebook's pages run what notebooks write: the notebook origin never grants this machine's authority.
      if (!config.localAccess || !credential.localPeer || credential.surface === "notebook" || credential.surface === "git") return keyRequired
      if (credential.surface !== "mcp") return Effect.succeed(local)
      return Effect.flatMap(keys.userKeysExist, (exist) => (exist ? keyRequired : Effect.succeed(local)))
    }

    const authenticate = (credential: Credential): Effect.Effect<Principal, Unauthenticated | InvalidApiKey | Unavailable> => {
      const token = credential.token
      if (token === null || token.length === 0) return localAdmin(credential)
      if (credential.surface === "git" && !token.startsWith("sp_")) return Effect.fail(new Unauthenticated({ message: "Git takes an API key (sp_…) as the password" }))
      if (credential.surface === "mcp" && !token.startsWith("sp_") && looksLikeJwt(token)) {
        return Effect.fail(new Unauthenticated({ message: "MCP takes API keys only (x-api-key or Authorization: Bearer sp_…); session tokens are for the web app" }))
      }
      if (token.startsWith("sp_") || Option.isNone(jwks) || !looksLikeJwt(token)) return fromKey(token)
      return fromJwt(token)
    }

    /** `authenticate` for an API key this replica holds verified in memory; undefined where only `authenticate` can tell. */
    const authenticateNow = (token: string): Principal | undefined => {
      const row = keys.verifiedInMemory(token)
      return row === undefined ? undefined : keyPrincipal(row)
    }

    /** Where a refused credential belongs, when the store knows: only a key's own record says (a token's claims are unverified). */
    const orgOfRefused = (token: string | null) => (token === null ? Effect.succeed(null) : keys.orgOf(token))

    return { authenticate, authenticateNow, orgOfRefused } as const
  }),
  dependencies: [ApiKeys.Default, OrgsRepo.Default]
}) {}
