import { Effect, Layer, Schedule } from "effect"
import { Leases } from "../../layers/Leases"
import { EvalUploads } from "../../src/services/EvalUploads"

/** Once across replicas, every minute: aborts eval-set uploads left open past 6 hours and deletes archives past their 7 days. */
export const EvalUploadExpiryLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const uploads = yield* EvalUploads
    const leases = yield* Leases
    const sweep = uploads.expire.pipe(
      Effect.tap((count) => (count > 0 ? Effect.logInfo(`expired ${count} eval-set upload(s)`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logError("expiring eval-set uploads failed", cause))
    )
    yield* leases.runLeased("eval-upload-expiry", Effect.repeat(sweep, Schedule.spaced("1 minute"))).pipe(Effect.forkScoped)
  })
)
