import { Duration, Effect, Layer, Random, Schedule } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { Leases } from "../../layers/Leases"
import { ConnectionHealth } from "../../src/services/ConnectionHealth"

const RETENTION_DAYS = 7

/** One replica pings every connection of every org each SP_HEALTH_INTERVAL_SECONDS (jittered) and prunes checks past 7 days. */
export const HealthLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const health = yield* ConnectionHealth
    const leases = yield* Leases

    const round = health.checkAll.pipe(Effect.catchAllCause((cause) => Effect.logError("connection health round failed", cause)))
    // The first round waits one period too, so a gateway that restarts in a loop does not hammer databases.
    const pause = Effect.flatMap(Random.nextRange(0.8, 1.2), (factor) => Effect.sleep(Duration.seconds(config.healthIntervalSeconds * factor)))
    yield* leases.runLeased("connection-health", Effect.forever(Effect.zipRight(pause, round))).pipe(Effect.forkScoped)

    const prune = health
      .pruneBefore(new Date(Date.now() - RETENTION_DAYS * 86_400_000))
      .pipe(Effect.catchAllCause((cause) => Effect.logError("connection health pruning failed", cause)))
    yield* leases.runLeased("connection-health-prune", Effect.repeat(prune, Schedule.spaced("1 hour"))).pipe(Effect.forkScoped)
  })
)
