import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { OrgId } from "../domain/Ids"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

// The entries a request names, for the log; past this many it still stands for all of them.
const ENTRIES_KEPT = 100
const DueRequest = Schema.Struct({ org_id: OrgId, entries: Schema.parseJson(Schema.Array(Schema.String)) })

/** Knowledge changes waiting to autorun their organization's evaluation: one request per organization. */
export class EvalAutorunRepo extends Effect.Service<EvalAutorunRepo>()("sluice/EvalAutorunRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("evaluation autorun")

    /** The change of `entryId` joins the org's waiting request, or makes one due in `afterSeconds`. */
    const request = Effect.fn("EvalAutorunRepo.request")(
      (orgId: OrgId, entryId: string, afterSeconds: number) =>
        sql`insert into eval_autorun_requests (org_id, due_at, entries)
            values (${orgId}, now() + make_interval(secs => ${afterSeconds}), ${JSON.stringify([entryId])}::jsonb)
          on conflict (org_id) do update set entries = case
            when eval_autorun_requests.entries @> excluded.entries or jsonb_array_length(eval_autorun_requests.entries) >= ${ENTRIES_KEPT}
              then eval_autorun_requests.entries
            else eval_autorun_requests.entries || excluded.entries end`.pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    /**
     * System work: the requests now due, across orgs, each taken once (whichever replica takes it
     * starts its run); an org's request waits while it has a run in flight, so autoruns never pile up.
     */
    const takeDue = Effect.fn("EvalAutorunRepo.takeDue")(
      () =>
        sql`delete from eval_autorun_requests q where due_at <= now()
            and not exists (select 1 from eval_runs r where r.org_id = q.org_id and r.status in ('queued', 'running'))
          returning org_id, entries::text as entries`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Schema.Array(DueRequest)))
        ),
      failures
    )

    /** A request that could not start its run now, back in `afterSeconds` (joined by changes meanwhile). */
    const putBack = Effect.fn("EvalAutorunRepo.putBack")(
      (orgId: OrgId, entries: ReadonlyArray<string>, afterSeconds: number) =>
        sql`insert into eval_autorun_requests (org_id, due_at, entries)
            values (${orgId}, now() + make_interval(secs => ${afterSeconds}), ${JSON.stringify(entries.slice(0, ENTRIES_KEPT))}::jsonb)
          on conflict (org_id) do nothing`.pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    return { request, takeDue, putBack } as const
  })
}) {}
