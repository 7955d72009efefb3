import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import { TENANT_ROLE } from "../migrations/TenantIsolation"
import { recordChange } from "./ChangeRecord"

/**
 * Runs `effect` in a transaction as the tenant role with `app.org_id` set, so row-level security
 * hides every other org's rows even from a query that forgot its org filter. A transaction that
 * changes anything for a request commits the request's audit row with it.
 */
export const tenantScope =
  (sql: SqlClient.SqlClient) =>
  (orgId: OrgId) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    sql.withTransaction(
      sql`select set_config('app.org_id', ${orgId}, true), set_config('role', ${TENANT_ROLE}, true)`.pipe(
        Effect.zipRight(effect),
        Effect.tap(() => recordChange(sql))
      )
    )
