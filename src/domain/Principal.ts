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
  /** The database branch of its one connection a key may write in, as the branch's own role (an evaluation write task's key). */
  readonly branch?: BranchGrant
  /** Knowledge entries served to it as if approved (an evaluation task's key: its run's doc_ids). */
  readonly knowledgeOverlay?: ReadonlyArray<string>
}

export interface BranchGrant {
  readonly connection: string
  readonly project: string
  readonly name: string
}

/** Whether the principal may use the connection named `name` at all (its key's limit, where it has one). */
export const mayUseConnection = (p: Principal, name: string) => p.connections === undefined || p.connections.includes(name)

/** A key's limits as a principal carries them: its connections (absent when it has none), and the branch it may write in. */
export const keyLimits = (key: {
  readonly connections: ReadonlyArray<string> | null
  readonly branch_project: string | null
  readonly branch_name: string | null
  readonly knowledge_overlay: ReadonlyArray<string> | null
}): Pick<Principal, "connections" | "branch" | "knowledgeOverlay"> => ({
  ...(key.connections === null ? {} : { connections: key.connections }),
  ...(key.connections?.length === 1 && key.branch_project !== null && key.branch_name !== null
    ? { branch: { connection: key.connections[0]!, project: key.branch_project, name: key.branch_name } }
    : {}),
  ...(key.knowledge_overlay === null || key.knowledge_overlay.length === 0 ? {} : { knowledgeOverlay: key.knowledge_overlay })
})

export class CurrentPrincipal extends Context.Tag("sluice/CurrentPrincipal")<CurrentPrincipal, Principal>() {}

export const principalLabel = (p: Principal): string =>
  p.kind === "api_key" ? `key:${p.keyPrefix}` : p.kind === "jwt" ? `user:${p.userId}` : "local"

/** The credential a job was started with, as its record keeps it (never the secret itself). */
export interface StoredCredential {
  readonly orgId: OrgId
  readonly userId: UserId
  readonly principalKind: Principal["kind"]
  readonly keyId: KeyId | null
}
