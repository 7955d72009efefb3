import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { EvalConfig } from "../domain/EvalConfig"
import { OrgId } from "../domain/Ids"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

// A stored row always has who saved it and when.
const ConfigRow = Schema.Struct({ ...EvalConfig.fields, updated_by: Schema.String, updated_at: Schema.DateFromSelf })
export type EvalConfigRow = typeof ConfigRow.Type

const { updated_at: _updatedAt, eval_set: _evalSet, notify_emails: _notify, ...plainFields } = ConfigRow.fields
/** The row as written: its JSON columns as text. */
const NewConfigRow = Schema.Struct({ ...plainFields, eval_set: Schema.NullOr(Schema.String), notify_emails: Schema.String })

const COLUMNS = "connection_name, eval_set, runner_profile, notify_emails, prompt_preamble, max_tasks, attempts, model, autorun, updated_by, updated_at"

/** Evaluation settings, one row per org. */
export class EvalConfigsRepo extends Effect.Service<EvalConfigsRepo>()("sluice/EvalConfigsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("evaluation settings store")

    const findConfig = SqlSchema.findOne({
      Request: OrgId,
      Result: ConfigRow,
      execute: (orgId) => sql`select ${sql.unsafe(COLUMNS)} from eval_configs where org_id = ${orgId}`
    })
    /** The org's settings, or null before any were saved. */
    const get = Effect.fn("EvalConfigsRepo.get")((orgId: OrgId) => findConfig(orgId).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const saveConfig = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, row: NewConfigRow }),
      Result: ConfigRow,
      execute: ({ orgId, row }) =>
        sql`insert into eval_configs (org_id, connection_name, eval_set, runner_profile, notify_emails, prompt_preamble, max_tasks, attempts, model, autorun, updated_by)
          values (${orgId}, ${row.connection_name}, ${row.eval_set}::jsonb, ${row.runner_profile}, ${row.notify_emails}::jsonb, ${row.prompt_preamble}, ${row.max_tasks}, ${row.attempts}, ${row.model}, ${row.autorun}, ${row.updated_by})
          on conflict (org_id) do update set connection_name = excluded.connection_name, eval_set = excluded.eval_set, runner_profile = excluded.runner_profile,
            notify_emails = excluded.notify_emails, prompt_preamble = excluded.prompt_preamble, max_tasks = excluded.max_tasks, attempts = excluded.attempts, model = excluded.model,
            autorun = excluded.autorun, updated_by = excluded.updated_by, updated_at = date_trunc('milliseconds', now())
          returning ${sql.unsafe(COLUMNS)}`
    })
    /** Saves the whole of the org's settings. */
    const save = Effect.fn("EvalConfigsRepo.save")(
      (orgId: OrgId, config: Omit<EvalConfigRow, "updated_at">) =>
        saveConfig({ orgId, row: { ...config, eval_set: config.eval_set === null ? null : JSON.stringify(config.eval_set), notify_emails: JSON.stringify(config.notify_emails) } }).pipe(withOrg(orgId)),
      failures
    )

    return { get, save } as const
  })
}) {}
