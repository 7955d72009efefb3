import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { OrgId, UserId } from "../domain/Ids"
import { Role } from "../domain/Scope"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const Member = Schema.Struct({ orgId: OrgId, orgName: Schema.String, userId: UserId, role: Role })

export class OrgsRepo extends Effect.Service<OrgsRepo>()("sluice/OrgsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("store")

    const upsertMember = SqlSchema.findOne({
      Request: Member,
      Result: Schema.Struct({ changed: Schema.Literal(1) }),
      execute: (input) =>
        sql`with org as (
            insert into organizations (id, name) values (${input.orgId}, ${input.orgName}) on conflict (id) do nothing
          ), member as (
            insert into users (id) values (${input.userId}) on conflict (id) do nothing
          )
          insert into memberships (org_id, user_id, role) values (${input.orgId}, ${input.userId}, ${input.role})
          on conflict (org_id, user_id) do update set role = excluded.role where memberships.role <> excluded.role
          returning 1 as changed`
    })
    /** Idempotent provisioning of an org, a user and the user's current role in it, in one round trip; true when the role changed. */
    const ensureMember = Effect.fn("OrgsRepo.ensureMember")((input: typeof Member.Type) => upsertMember(input).pipe(Effect.map(Option.isSome)), failures)

    const planOf = SqlSchema.findOne({
      Request: OrgId,
      Result: Schema.Struct({ plan: Schema.String }),
      execute: (orgId) => sql`select plan from organizations where id = ${orgId}`
    })
    const plan = Effect.fn("OrgsRepo.plan")(
      (orgId: OrgId) => planOf(orgId).pipe(Effect.map(Option.match({ onNone: () => null, onSome: (row) => row.plan })), withOrg(orgId)),
      failures
    )

    const membership = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, userId: UserId }),
      Result: Schema.Struct({ role: Role }),
      execute: ({ orgId, userId }) => sql`select role from memberships where org_id = ${orgId} and user_id = ${userId}`
    })
    /** The user's role in the org, or null when they are not (or no longer) a member. */
    const roleOf = Effect.fn("OrgsRepo.roleOf")(
      (orgId: OrgId, userId: UserId) => membership({ orgId, userId }).pipe(Effect.map(Option.match({ onNone: () => null, onSome: (row) => row.role }))),
      failures
    )

    return { ensureMember, plan, roleOf } as const
  })
}) {}
