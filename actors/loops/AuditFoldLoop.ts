import { Effect, Layer, Schedule } from "effect"
import { AuditRepo } from "../../src/repos/AuditRepo"

const EVERY = "5 seconds"

/**
 * Folds new audit rows into the hourly rollups, off the request path (0024_audit_rollups_folded).
 * Every replica runs it: the fold's row lock serializes them, and one that finds nothing new writes nothing.
 */
export const AuditFoldLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const repo = yield* AuditRepo
    const fold = repo.fold().pipe(Effect.catchAllCause((cause) => Effect.logError("folding audit rows into the rollups failed", cause)))
    yield* Effect.repeat(fold, Schedule.spaced(EVERY)).pipe(Effect.forkScoped)
  })
)
