import { Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { Leases } from "../../layers/Leases"
import { SchemaWatches } from "../../src/services/SchemaWatches"

const BATCH = 20

/** One replica runs, every SP_SCHEMA_LOOP_SECONDS, the schema watches whose interval has passed; a failed run is recorded on its watch. */
export const SchemaWatchLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const watches = yield* SchemaWatches
    const leases = yield* Leases
    const round = watches.due(BATCH).pipe(
      Effect.flatMap((due) =>
        Effect.forEach(due, (w) => watches.runIn(w.org_id, w.id).pipe(Effect.catchAll((error) => Effect.logWarning(`schema watch ${w.id} failed: ${error.message}`))))
      ),
      Effect.catchAllCause((cause) => Effect.logError("schema watch round failed", cause))
    )
    yield* leases.runLeased("schema-watches", Effect.repeat(round, Schedule.spaced(`${config.schemaLoopSeconds} seconds`))).pipe(Effect.forkScoped)
  })
)
