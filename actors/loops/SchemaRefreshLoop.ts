import { Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { Leases } from "../../layers/Leases"
import { Schemas } from "../../src/services/Schemas"

const DEFAULT_INTERVAL_SECONDS = 86_400
const BATCH = 10

/**
 * One replica rescans, every SP_SCHEMA_LOOP_SECONDS, the connections whose snapshot is older than their
 * schema_refresh_interval (a day by default); a scan that finds a change records it.
 * Connections never scanned are left alone: their first read scans them.
 */
export const SchemaRefreshLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const schemas = yield* Schemas
    const leases = yield* Leases
    const round = schemas.dueForRefresh(DEFAULT_INTERVAL_SECONDS, BATCH).pipe(
      Effect.flatMap((due) =>
        Effect.forEach(due, (c) =>
          schemas.refreshIn(c.org_id, c.name).pipe(Effect.catchAll((error) => Effect.logWarning(`schema refresh of ${c.name} failed: ${error.message}`)))
        )
      ),
      Effect.catchAllCause((cause) => Effect.logError("schema refresh round failed", cause))
    )
    yield* leases.runLeased("schema-refresh", Effect.repeat(round, Schedule.spaced(`${config.schemaLoopSeconds} seconds`))).pipe(Effect.forkScoped)
  })
)
