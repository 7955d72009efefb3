import { Schema } from "effect"
import { KeyId, UserId } from "./Ids"
import type { Principal } from "./Principal"

/** The credential that started a record running code (a sandbox, a notebook session): its user, kind and key. */
export const Starter = Schema.Struct({ userId: UserId, kind: Schema.Literal("api_key", "jwt", "local"), keyId: Schema.NullOr(KeyId) })

export const starterOf = (principal: Principal): typeof Starter.Type => ({ userId: principal.userId, kind: principal.kind, keyId: principal.keyId })

/**
 * Whether `principal` is the credential that started the record: the same API key, or the same
 * user's session or local access. Another key of the same user is someone else: its scopes may be
 * fewer, and code (or files) one left would otherwise run with the other's rights.
 */
export const isStarter = (principal: Principal, started: { readonly org_id: string; readonly user_id: string; readonly principal_kind: Principal["kind"]; readonly key_id: string | null }) =>
  started.org_id === principal.orgId && started.user_id === principal.userId && started.principal_kind === principal.kind && started.key_id === principal.keyId
