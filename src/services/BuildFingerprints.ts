import { createHash } from "node:crypto"
import { Effect, Either } from "effect"
import { InvalidRequest, Unavailable } from "../domain/Errors"
import { modelKey } from "../domain/grading/Grade"
import type { Principal } from "../domain/Principal"
import { quoteIdentifier } from "../governance/Catalog"
import { EvalQueries } from "./EvalQueries"
import { Schemas } from "./Schemas"

/** A warehouse with more relations than this is fingerprinted by the models a set covers, not whole. */
export const MAX_FINGERPRINT_RELATIONS = 500
const COUNT_CONCURRENCY = 4
const unreadable = (connection: string, why: string) => new Unavailable({ message: `The schema of ${connection} could not be read for the build fingerprint: ${why}` })

/** One relation as the fingerprint sees it. */
export interface FingerprintedRelation {
  readonly relation: string
  readonly kind: string
  readonly columns: ReadonlyArray<readonly [string, string]>
  /** Its exact row count as the governed executor read it; null when the gateway may not count it (blocked, failed). */
  readonly rows: number | null
}

/**
 * The build fingerprint of the warehouse an eval set is graded against: `sha256:` over the relations
 * the set covers (every relation a task's `covers` names, matched by name; all tables and views when
 * no task names any), each its schema-qualified name, kind, columns with their types in order, and
 * exact row count (`count(*)` through the governed executor, audited). Two warehouses with the same
 * fingerprint answer the set's questions from the same models with the same shapes and sizes.
 */
export class BuildFingerprints extends Effect.Service<BuildFingerprints>()("sluice/BuildFingerprints", {
  effect: Effect.gen(function* () {
    const schemas = yield* Schemas
    const evalQueries = yield* EvalQueries

    const fingerprint = Effect.fn("BuildFingerprints.fingerprint")(function* (principal: Principal, connection: string, covers: ReadonlyArray<string>, runId: string) {
      const view = yield* schemas.view(principal, connection).pipe(
        Effect.catchTags({
          QueryFailed: (e) => Effect.fail(unreadable(connection, e.message)),
          QueryTimeout: (e) => Effect.fail(unreadable(connection, e.message)),
          DatabaseUnavailable: (e) => Effect.fail(unreadable(connection, e.message))
        })
      )
      const wanted = new Set(covers.map(modelKey))
      const chosen = view.tables.filter((t) => wanted.size === 0 || wanted.has(modelKey(t.name)))
      if (chosen.length > MAX_FINGERPRINT_RELATIONS) {
        return yield* new InvalidRequest({
          message: `The warehouse has ${chosen.length} relations, more than the ${MAX_FINGERPRINT_RELATIONS} a build fingerprint covers: name the models the set's tasks read in their covers`
        })
      }
      const dbType = view.connection.db_type
      const relations = yield* Effect.forEach(
        [...chosen].sort((a, b) => `${a.schema}.${a.name}`.localeCompare(`${b.schema}.${b.name}`)),
        (table) =>
          Effect.map(
            evalQueries.run(principal, connection, `select count(*) from ${quoteIdentifier(dbType, table.schema)}.${quoteIdentifier(dbType, table.name)}`, 1, { eval_run_id: runId }),
            (counted): FingerprintedRelation => ({
              relation: `${table.schema}.${table.name}`,
              kind: table.kind,
              columns: table.columns.map((c) => [c.name, c.type] as const),
              rows: Either.match(counted, { onLeft: () => null, onRight: (result) => Number(result.rows[0]?.[0] ?? Number.NaN) })
            })
          ),
        { concurrency: COUNT_CONCURRENCY }
      )
      const digest = createHash("sha256")
      for (const relation of relations) digest.update(`${JSON.stringify(relation)}\n`)
      return { fingerprint: `sha256:${digest.digest("hex")}`, relations }
    })

    return { fingerprint } as const
  }),
  dependencies: [Schemas.Default, EvalQueries.Default]
}) {}
