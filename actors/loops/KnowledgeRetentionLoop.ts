import { Clock, Effect, Layer, Schedule } from "effect"
import { Leases } from "../../layers/Leases"
import { KnowledgeRepo } from "../../src/repos/KnowledgeRepo"

const EVERY = "1 hour"
// The specification's retention for knowledge retrieval events.
const KEEP_DAYS = 90

/** Prunes knowledge retrieval events older than 90 days, hourly, on one replica at a time. */
export const KnowledgeRetentionLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const repo = yield* KnowledgeRepo
    const leases = yield* Leases
    const prune = Effect.gen(function* () {
      const before = new Date((yield* Clock.currentTimeMillis) - KEEP_DAYS * 86_400_000)
      let removed = 0
      let batch = 0
      do {
        batch = yield* repo.pruneRetrievals(before)
        removed += batch
      } while (batch > 0)
      if (removed > 0) yield* Effect.logInfo(`knowledge retention removed ${removed} retrieval events older than ${KEEP_DAYS} days`)
    }).pipe(Effect.catchAllCause((cause) => Effect.logError("knowledge retention failed", cause)))
    yield* leases.runLeased("knowledge-retention", Effect.repeat(prune, Schedule.spaced(EVERY))).pipe(Effect.forkScoped)
  })
)
