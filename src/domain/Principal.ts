import { Context } from "effect"
import type { KeyId, OrgId, UserId } from "./Ids"
import type { Role, Scope } from "./Scope"

/** Who is calling: always derived from the credential, never from a request parameter. */
export interface Principal {
  readonly kind: "api_key" | "jwt" | "local"
  readonly orgId: OrgId
  readonly userId: UserId
  readonly keyId: KeyId | null
  readonly keyPrefix: string | null
  readonly scopes: ReadonlyArray<Scope>
  readonly role: Role
}

export class CurrentPrincipal extends Context.Tag("sluice/CurrentPrincipal")<CurrentPrincipal, Principal>() {}

export const principalLabel = (p: Principal): string =>
  p.kind === "api_key" ? `key:${p.keyPrefix}` : p.kind === "jwt" ? `user:${p.userId}` : "local"
