import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId, UserId } from "../domain/Ids"
import type { Role } from "../domain/Scope"
import { tenantScope } from "./Tenant"

export class OrgsRepo extends Effect.Service<OrgsRepo>()("sluice/OrgsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)

    /** Idempotent provisioning of an org, a user and the user's current role in it, in one round trip; true when the role changed. */
    const ensureMember = (input: { orgId: OrgId; orgName: string; userId: UserId; role: Role }) =>
      sql`with org as (
            insert into organizations (id, name) values (${input.orgId}, ${input.orgName}) on conflict (id) do nothing
          ), member as (
            insert into users (id) values (${input.userId}) on conflict (id) do nothing
          )
          insert into memberships (org_id, user_id, role) values (${input.orgId}, ${input.userId}, ${input.role})
          on conflict (org_id, user_id) do update set role = excluded.role where memberships.role <> excluded.role
          returning 1`.pipe(Effect.map((rows) => rows.length > 0))

    const plan = (orgId: OrgId) =>
      sql<{ plan: string }>`select plan from organizations where id = ${orgId}`.pipe(
        Effect.map((rows) => rows[0]?.plan ?? null),
        withOrg(orgId)
      )

    /** The user's role in the org, or null when they are not (or no longer) a member. */
    const roleOf = (orgId: OrgId, userId: UserId) =>
      sql<{ role: Role }>`select role from memberships where org_id = ${orgId} and user_id = ${userId}`.pipe(Effect.map((rows) => rows[0]?.role ?? null))

    return { ensureMember, plan, roleOf } as const
  })
}) {}
