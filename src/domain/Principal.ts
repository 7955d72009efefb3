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
  /** The connections a key is limited to (an evaluation task's key: its run's); absent, every connection of its org. */
  readonly connections?: ReadonlyArray<string>
}

/** Whether the principal may use the connection named `name` at all (its key's limit, where it has one). */
export const mayUseConnection = (p: Principal, name: string) => p.connections === undefined || p.connections.includes(name)

/** The key's connection limit as a principal carries it: absent when it has none. */
export const connectionLimit = (connections: ReadonlyArray<string> | null): Pick<Principal, "connections"> => (connections === null ? {} : { connections })

export class CurrentPrincipal extends Context.Tag("sluice/CurrentPrincipal")<CurrentPrincipal, Principal>() {}

export const principalLabel = (p: Principal): string =>
  p.kind === "api_key" ? `key:${p.keyPrefix}` : p.kind === "jwt" ? `user:${p.userId}` : "local"
