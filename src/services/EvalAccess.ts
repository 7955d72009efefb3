import { Effect } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { ObjectStore } from "../../layers/ObjectStore"
import { type EvalAvailability, RUNNER_PROFILES } from "../domain/EvalConfig"
import { Forbidden } from "../domain/Errors"
import { LOCAL_ORG, LOCAL_USER } from "../domain/Ids"
import type { Principal } from "../domain/Principal"

/**
 * Who may use evaluations: platform staff (a user id in SP_ADMIN_USER_IDS) of an allow-listed
 * organization (SP_EVAL_ALLOWED_ORGS), besides each route's scope. Self-hosted, the local operator
 * (and the keys it makes) counts as staff and the local organization as allowed.
 */
export class EvalAccess extends Effect.Service<EvalAccess>()("sluice/EvalAccess", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const objects = yield* ObjectStore
    const isStaff = (p: Principal) => config.adminUserIds.includes(p.userId) || (config.selfHosted && p.userId === LOCAL_USER)
    const isAllowed = (p: Principal) => config.evalAllowedOrgs.includes(p.orgId) || (config.selfHosted && p.orgId === LOCAL_ORG)

    const staff = (p: Principal) =>
      isStaff(p) ? Effect.void : Effect.fail(new Forbidden({ message: "Evaluations are for platform staff: this user's id is not in SP_ADMIN_USER_IDS" }))

    /** Staff of an allow-listed organization: every evaluation route but availability and uploads. */
    const allowed = (p: Principal) =>
      Effect.zipRight(
        staff(p),
        isAllowed(p) ? Effect.void : Effect.fail(new Forbidden({ message: "Evaluations are not enabled for this organization: its id is not in SP_EVAL_ALLOWED_ORGS" }))
      )

    const availability = Effect.fn("EvalAccess.availability")(function* (p: Principal) {
      yield* staff(p)
      const reasons = [
        ...(isAllowed(p) ? [] : ["this organization is not in SP_EVAL_ALLOWED_ORGS"]),
        ...(objects.configured ? [] : ["evidence storage is not configured (SP_S3_BUCKET or SP_OBJECT_STORE=filesystem)"])
      ]
      return {
        enabled: reasons.length === 0,
        staff: true,
        organization_allowed: isAllowed(p),
        evidence_storage: config.objectStore,
        runner_profiles: [...RUNNER_PROFILES],
        reasons
      } satisfies EvalAvailability
    })

    /** Whether the caller may see what an evaluation run owns (a task's agent run): its staff alone; anything an evaluation does not own, anyone the route lets. */
    const maySee = (p: Principal, evalRunId: string | null) => (evalRunId === null || (isStaff(p) && isAllowed(p)))

    return { staff, allowed, maySee, availability } as const
  }),
  dependencies: [ObjectStore.Default]
}) {}
