import { Data, Effect } from "effect"
import { keyLimits, type Principal, type StoredCredential } from "../domain/Principal"
import type { Scope } from "../domain/Scope"
import { OrgsRepo } from "../repos/OrgsRepo"
import { ApiKeys } from "./ApiKeys"

/** The credential a job acts with no longer opens anything: `message` says why. */
export class CredentialGone extends Data.TaggedError("CredentialGone")<{ readonly message: string }> {}

/**
 * Who a job acts as now: its starter's credential checked again (a deleted or expired key, or a
 * user no longer in the org, stops it), with scopes capped at `allowed`. A store that cannot answer
 * fails with Unavailable, never as a revoked credential.
 */
export class ActingPrincipals extends Effect.Service<ActingPrincipals>()("sluice/ActingPrincipals", {
  effect: Effect.gen(function* () {
    const keys = yield* ApiKeys
    const orgs = yield* OrgsRepo

    const actingAs = (stored: StoredCredential, allowed: ReadonlySet<Scope>, what: string) => {
      const { orgId, userId } = stored
      if (stored.principalKind === "local") {
        return Effect.succeed<Principal>({ kind: "local", orgId, userId, keyId: null, keyPrefix: null, scopes: [...allowed], role: "admin" })
      }
      if (stored.principalKind === "jwt" || stored.keyId === null) {
        // A session's token is not kept: the job goes on while its user is still a member of the org.
        return Effect.flatMap(orgs.roleOf(orgId, userId), (role) =>
          role === null
            ? Effect.fail(new CredentialGone({ message: `The user who started the ${what} is no longer a member of the organization` }))
            : Effect.succeed<Principal>({ kind: "jwt", orgId, userId, keyId: null, keyPrefix: null, scopes: [...allowed], role })
        )
      }
      return keys.current(stored.keyId).pipe(
        Effect.map(
          (key): Principal => ({
            kind: "api_key",
            orgId: key.org_id,
            userId: key.user_id,
            keyId: key.id,
            keyPrefix: key.prefix,
            scopes: key.scopes.filter((scope) => allowed.has(scope)),
            role: key.role,
            ...keyLimits(key)
          })
        ),
        Effect.catchTag("InvalidApiKey", (e) => Effect.fail(new CredentialGone({ message: `The ${what}'s API key no longer opens anything: ${e.message}` })))
      )
    }

    return { actingAs } as const
  }),
  dependencies: [ApiKeys.Default, OrgsRepo.Default]
}) {}
