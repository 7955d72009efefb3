import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { OrgId } from "../domain/Ids"
import { SettingsFields } from "../domain/Settings"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const StoredSettings = Schema.Struct(SettingsFields)
type StoredSettings = typeof StoredSettings.Type
const decodeStored = Schema.decodeUnknownOption(StoredSettings)

export class SettingsRepo extends Effect.Service<SettingsRepo>()("sluice/SettingsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("settings store")

    const settingsOf = SqlSchema.findOne({
      Request: OrgId,
      Result: Schema.Struct({ settings: Schema.Unknown }),
      execute: (orgId) => sql`select settings from org_settings where org_id = ${orgId}`
    })
    // Settings a later release no longer accepts count as unset, rather than failing every query of the org.
    const get = Effect.fn("SettingsRepo.get")(
      (orgId: OrgId) =>
        settingsOf(orgId).pipe(
          Effect.map((row): StoredSettings => Option.getOrElse(Option.flatMap(row, (found) => decodeStored(found.settings)), () => ({}))),
          withOrg(orgId)
        ),
      failures
    )

    const storeSettings = SqlSchema.void({
      Request: Schema.Struct({ orgId: OrgId, settings: StoredSettings }),
      execute: ({ orgId, settings }) =>
        sql`insert into org_settings (org_id, settings) values (${orgId}, ${JSON.stringify(settings)}::jsonb)
          on conflict (org_id) do update set settings = excluded.settings, updated_at = now()`
    })
    const put = Effect.fn("SettingsRepo.put")((orgId: OrgId, settings: StoredSettings) => storeSettings({ orgId, settings }).pipe(withOrg(orgId)), failures)

    return { get, put } as const
  })
}) {}
