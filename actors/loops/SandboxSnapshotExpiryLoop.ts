import { Duration, Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { Leases } from "../../layers/Leases"
import { Sandboxes } from "../../src/services/Sandboxes"

/** Once across replicas: deletes sandbox snapshots unused past SP_NOTEBOOK_SNAPSHOT_EXPIRATION_SECONDS; their sandboxes answer that they expired. */
export const SandboxSnapshotExpiryLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const sandboxes = yield* Sandboxes
    const leases = yield* Leases
    // Often enough that a snapshot outlives its expiration by at most a tenth of it (and a minute).
    const every = Duration.seconds(Math.min(60, Math.max(1, config.sandboxSnapshotExpirationSeconds / 10)))
    const sweep = sandboxes.expireSnapshots.pipe(
      Effect.tap((count) => (count > 0 ? Effect.logInfo(`deleted ${count} expired sandbox snapshot(s)`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logError("deleting expired sandbox snapshots failed", cause))
    )
    yield* leases.runLeased("sandbox-snapshot-expiry", Effect.repeat(sweep, Schedule.spaced(every))).pipe(Effect.forkScoped)
  })
)
