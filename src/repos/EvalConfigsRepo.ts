import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { EvalConfig } from "../domain/EvalConfig"
import { type KeyId, OrgId, type UserId } from "../domain/Ids"
import type { StoredCredential } from "../domain/Principal"
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

    /** Who the org's autoruns act as: the credential that turned autorun on (null: none, autorun off). */
    const setAutorunBy = Effect.fn("EvalConfigsRepo.setAutorunBy")(
      (orgId: OrgId, by: StoredCredential | null) =>
        sql`update eval_configs set autorun_user_id = ${by?.userId ?? null}, autorun_principal_kind = ${by?.principalKind ?? null}, autorun_key_id = ${by?.keyId ?? null}
          where org_id = ${orgId}`.pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    /** The org's autorun, when it is on: who it acts as. */
    const autorunBy = Effect.fn("EvalConfigsRepo.autorunBy")(
      (orgId: OrgId) =>
        sql<{ user_id: string; principal_kind: StoredCredential["principalKind"]; key_id: string | null }>`select autorun_user_id as user_id, autorun_principal_kind as principal_kind, autorun_key_id as key_id
          from eval_configs where org_id = ${orgId} and autorun and autorun_user_id is not null`.pipe(
          Effect.map(([row]): StoredCredential | null =>
            row === undefined ? null : { orgId, userId: row.user_id as UserId, principalKind: row.principal_kind, keyId: row.key_id as KeyId | null }
          ),
          withOrg(orgId)
        ),
      failures
    )

    return { get, save, setAutorunBy, autorunBy } as const
  })
}) {}
