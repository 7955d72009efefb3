import { Effect, Layer, Schedule } from "effect"
import { AUTORUN_COALESCE_SECONDS } from "../../src/domain/EvalRun"
import type { OrgId } from "../../src/domain/Ids"
import { EvalAutorunRepo } from "../../src/repos/EvalAutorunRepo"
import { EvalConfigsRepo } from "../../src/repos/EvalConfigsRepo"
import { ActingPrincipals } from "../../src/services/ActingPrincipals"
import { EvalRuns } from "../../src/services/EvalRuns"
import { STARTER_SCOPES } from "../jobs/evalRun/EvalRunLifecycle"

const EVERY = "5 seconds"

/**
 * Every 5 s, on every replica: starts the evaluation runs that knowledge changes asked for, once
 * due (2 minutes after the first change a request holds) and its organization has no run in flight
 * (autoruns never pile up). Each request is taken by one replica alone (taken as it is deleted),
 * and the run acts as whoever turned autorun on. One that cannot start for now (this process has
 * two runs in flight, the store blinked) is put back for later; one refused for good (autorun
 * since turned off, its credential gone, the settings incomplete) is logged and dropped.
 */
export const EvalAutorunLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const requests = yield* EvalAutorunRepo
    const configs = yield* EvalConfigsRepo
    const acting = yield* ActingPrincipals
    const runs = yield* EvalRuns

    const startFor = (orgId: OrgId, entries: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const by = yield* configs.autorunBy(orgId)
        if (by === null) return yield* Effect.logInfo(`evaluation autorun of ${orgId}: autorun is off now; the knowledge change runs nothing`)
        const principal = yield* acting.actingAs(by, STARTER_SCOPES, "evaluation autorun")
        const run = yield* runs.start(principal, {}, true)
        yield* Effect.logInfo(`evaluation autorun of ${orgId}: run ${run.id} for knowledge ${entries.join(", ")}`)
      }).pipe(
        // Not now (this process has two runs in flight, or the store blinked): later.
        Effect.catchTags({ Conflict: () => requests.putBack(orgId, entries, AUTORUN_COALESCE_SECONDS), Unavailable: () => requests.putBack(orgId, entries, AUTORUN_COALESCE_SECONDS) }),
        Effect.catchAll((error) => Effect.logWarning(`evaluation autorun of ${orgId} did not start: ${"message" in error ? error.message : String(error)}`))
      )

    const pass = requests.takeDue().pipe(
      // Organizations side by side: one whose warehouse is slow to fingerprint holds up no other.
      Effect.flatMap((due) => Effect.forEach(due, (request) => startFor(request.org_id, request.entries), { concurrency: 4, discard: true })),
      Effect.catchAllCause((cause) => Effect.logError("evaluation autorun failed", cause))
    )
    yield* Effect.repeat(pass, Schedule.spaced(EVERY)).pipe(Effect.forkScoped)
  })
)
