import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import { tenantScope } from "./Tenant"

export class SettingsRepo extends Effect.Service<SettingsRepo>()("sluice/SettingsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)

    const get = (orgId: OrgId) =>
      sql<{ settings: unknown }>`select settings from org_settings where org_id = ${orgId}`.pipe(
        Effect.map((rows) => rows[0]?.settings ?? {}),
        withOrg(orgId)
      )

    const put = (orgId: OrgId, settings: object) =>
      sql`insert into org_settings (org_id, settings) values (${orgId}, ${JSON.stringify(settings)}::jsonb)
        on conflict (org_id) do update set settings = excluded.settings, updated_at = now()`.pipe(withOrg(orgId))

    return { get, put } as const
  })
}) {}
