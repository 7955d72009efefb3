import { Effect, Layer, Schedule } from "effect"
import { Leases } from "../../layers/Leases"
import { DbBranches } from "../../src/services/DbBranches"

const EVERY = "1 minute"

/** Deletes database branches whose lease ran out or whose job has ended (and any a dead process left half made), on one replica at a time. */
export const BranchReaperLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const branches = yield* DbBranches
    const leases = yield* Leases
    const pass = branches.reapDue().pipe(
      Effect.tap((reaped) => (reaped > 0 ? Effect.logInfo(`branch reaper deleted ${reaped} branches`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logError("branch reaper failed", cause))
    )
    yield* leases.runLeased("branch-reaper", Effect.repeat(pass, Schedule.spaced(EVERY))).pipe(Effect.forkScoped)
  })
)
