import { Effect } from "effect"
import { AUTORUN_COALESCE_SECONDS } from "../domain/EvalRun"
import type { OrgId } from "../domain/Ids"
import { EvalAutorunRepo } from "../repos/EvalAutorunRepo"
import { EvalConfigsRepo } from "../repos/EvalConfigsRepo"

/**
 * Autorun's intake: a knowledge entry added or approved, in an organization whose autorun is on,
 * asks for an evaluation run; changes within 2 minutes of the first share one run, whichever replica
 * they reach (the request is one row per organization; the autorun loop starts it when due).
 */
export class EvalAutorun extends Effect.Service<EvalAutorun>()("sluice/EvalAutorun", {
  effect: Effect.gen(function* () {
    const configs = yield* EvalConfigsRepo
    const requests = yield* EvalAutorunRepo

    /** An entry became live: asks for a run when autorun is on. Never fails the change (a failure is logged). */
    const knowledgeChanged = (orgId: OrgId, entryId: string) =>
      Effect.flatMap(configs.autorunBy(orgId), (by) => (by === null ? Effect.void : requests.request(orgId, entryId, AUTORUN_COALESCE_SECONDS))).pipe(
        Effect.catchAll((error) => Effect.logWarning(`knowledge entry ${entryId}: its evaluation autorun could not be asked for`, error))
      )

    return { knowledgeChanged } as const
  }),
  dependencies: [EvalConfigsRepo.Default, EvalAutorunRepo.Default]
}) {}
