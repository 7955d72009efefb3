import type { Effect } from "effect"
import type { Conflict, Unavailable } from "../../src/domain/Errors"
import type { PoolTarget } from "../connectors/ConnectorPools"

/** A branch's copy of a database: where it is and who logs in to it. */
export interface BranchCopy {
  readonly database: string
  readonly role: string
  /** The role's password; null where the branch is reached with the connection's own role and password. */
  readonly password: string | null
  /** The server the copy is on; null: the connection's own. */
  readonly host: string | null
  readonly port: number | null
  /** The provider's own id for the branch; null while it has none. */
  readonly ref: string | null
}

/**
 * Who makes database branches: template copies on the connection's own PostgreSQL server, or a
 * hosted branching service. `id` is the gateway's id of the branch, unique across providers.
 */
export interface BranchProvider {
  readonly kind: "postgres_template" | "hosted"
  /** The copy a new branch is to be, as far as it is known before anything is made. */
  readonly plan: (target: PoolTarget, id: string) => BranchCopy
  /** Makes the copy of `parent` (null: the connection's own database); `placed` hears where it is as soon as the provider knows. */
  readonly create: (
    target: PoolTarget,
    parent: BranchCopy | null,
    copy: BranchCopy,
    id: string,
    placed: (copy: BranchCopy) => Effect.Effect<void, Unavailable>
  ) => Effect.Effect<BranchCopy, Conflict | Unavailable>
  /** Deletes the copy; one that is already gone is no failure. */
  readonly remove: (target: PoolTarget, copy: BranchCopy, id: string) => Effect.Effect<void, Conflict | Unavailable>
}
