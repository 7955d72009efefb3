import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import { TENANT_ROLE } from "../migrations/TenantIsolation"

/**
 * Runs `effect` in a transaction as the tenant role with `app.org_id` set, so row-level security
 * hides every other org's rows even from a query that forgot its org filter.
 */
export const tenantScope =
  (sql: SqlClient.SqlClient) =>
  (orgId: OrgId) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    sql.withTransaction(
      Effect.zipRight(sql`select set_config('app.org_id', ${orgId}, true), set_config('role', ${TENANT_ROLE}, true)`, effect)
    )
