import { Effect, Layer, Schedule } from "effect"
import { Leases } from "../../layers/Leases"
import { EvalEvidence } from "../../src/services/EvalEvidence"

/** Once across replicas, hourly: ended eval runs past an organization's newest 10 lose their tasks' files, past its newest 100 their transcripts too. */
export const EvalRetentionLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const evidence = yield* EvalEvidence
    const leases = yield* Leases
    const prune = evidence.pruneDue.pipe(
      Effect.tap((runs) => (runs > 0 ? Effect.logInfo(`eval retention pruned the evidence of ${runs} run(s)`) : Effect.void)),
      // No evidence storage configured: nothing to prune.
      Effect.catchTag("Unavailable", () => Effect.void),
      Effect.catchAllCause((cause) => Effect.logError("eval retention failed", cause))
    )
    yield* leases.runLeased("eval-retention", Effect.repeat(prune, Schedule.spaced("1 hour"))).pipe(Effect.forkScoped)
  })
)
