import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { KeyId, NotebookSessionId, OrgId, UserId } from "../domain/Ids"
import { NotebookSessionStatus } from "../domain/NotebookSession"
import { Scope } from "../domain/Scope"
import { Starter } from "../domain/Starter"
import { conflictOnDuplicate, storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

export const NotebookSessionRow = Schema.Struct({
  id: NotebookSessionId,
  org_id: OrgId,
  user_id: UserId,
  principal_kind: Schema.Literal("api_key", "jwt", "local"),
  key_id: Schema.NullOr(KeyId),
  created_by: Schema.String,
  scopes: Schema.Array(Scope),
  connection_name: Schema.NullOr(Schema.String),
  status: NotebookSessionStatus,
  error: Schema.NullOr(Schema.String),
  host: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  last_activity_at: Schema.DateFromSelf
})
export type NotebookSessionRow = typeof NotebookSessionRow.Type

const NewSession = Schema.Struct({
  ...NotebookSessionRow.pick("id", "user_id", "principal_kind", "key_id", "created_by", "scopes", "connection_name").fields,
  host: Schema.String
})

const COLUMNS = "id, org_id, user_id, principal_kind, key_id, created_by, scopes, connection_name, status, error, host, created_at, last_activity_at"

/** Notebook sessions' records, per org. */
export class NotebookSessionsRepo extends Effect.Service<NotebookSessionsRepo>()("sluice/NotebookSessionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("notebook sessions store")

    const insertSession = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, row: NewSession }),
      Result: NotebookSessionRow,
      execute: ({ orgId, row }) => sql`insert into notebook_sessions ${sql.insert({ ...row, scopes: [...row.scopes], org_id: orgId, status: "starting" })} returning ${sql.unsafe(COLUMNS)}`
    })
    /** A new session, starting; a Conflict where the user has an active one already (on any replica). */
    const insert = Effect.fn("NotebookSessionsRepo.insert")(
      (orgId: OrgId, row: typeof NewSession.Type) =>
        insertSession({ orgId, row }).pipe(conflictOnDuplicate("This credential has an active notebook session already; use it, or delete it first"), withOrg(orgId)),
      failures
    )

    const findSession = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: NotebookSessionId }),
      Result: NotebookSessionRow,
      execute: ({ orgId, id }) => sql`select ${sql.unsafe(COLUMNS)} from notebook_sessions where org_id = ${orgId} and id = ${id}`
    })
    const find = Effect.fn("NotebookSessionsRepo.find")((orgId: OrgId, id: NotebookSessionId) => findSession({ orgId, id }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const activeSession = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, starter: Starter }),
      Result: NotebookSessionRow,
      execute: ({ orgId, starter }) =>
        sql`select ${sql.unsafe(COLUMNS)} from notebook_sessions where org_id = ${orgId} and user_id = ${starter.userId}
          and principal_kind = ${starter.kind} and coalesce(key_id, '') = ${starter.keyId ?? ""} and status in ('starting', 'running')`
    })
    /** The active session a credential started, if any. */
    const active = Effect.fn("NotebookSessionsRepo.active")(
      (orgId: OrgId, starter: typeof Starter.Type) => activeSession({ orgId, starter }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const setStatus = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: NotebookSessionId, status: NotebookSessionStatus, error: Schema.NullOr(Schema.String) }),
      Result: NotebookSessionRow,
      execute: ({ orgId, id, status, error }) =>
        sql`update notebook_sessions set status = ${status}, error = ${error},
          stopped_at = case when ${status} in ('stopped', 'error') then date_trunc('milliseconds', now()) else stopped_at end,
          host = case when ${status} in ('stopped', 'error') then null else host end
          where org_id = ${orgId} and id = ${id} returning ${sql.unsafe(COLUMNS)}`
    })
    /** Sets its status (and why it ended); null where there is no such session. */
    const status = Effect.fn("NotebookSessionsRepo.status")(
      (orgId: OrgId, id: NotebookSessionId, status: typeof NotebookSessionStatus.Type, error: string | null = null) =>
        setStatus({ orgId, id, status, error }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const touchSession = SqlSchema.void({
      Request: Schema.Struct({ orgId: OrgId, id: NotebookSessionId }),
      execute: ({ orgId, id }) => sql`update notebook_sessions set last_activity_at = date_trunc('milliseconds', now()) where org_id = ${orgId} and id = ${id}`
    })
    const touch = Effect.fn("NotebookSessionsRepo.touch")((orgId: OrgId, id: NotebookSessionId) => touchSession({ orgId, id }).pipe(withOrg(orgId)), failures)

    const held = SqlSchema.findAll({
      Request: Schema.Struct({ host: Schema.String }),
      Result: Schema.Struct({ id: NotebookSessionId, org_id: OrgId }),
      execute: ({ host }) => sql`select id, org_id from notebook_sessions where host = ${host} and status in ('starting', 'running')`
    })
    /** Every org's sessions a gateway process held when it stopped (system work: it runs as the store's owner). */
    const heldBy = Effect.fn("NotebookSessionsRepo.heldBy")((host: string) => held({ host }), failures)

    return { insert, find, active, status, touch, heldBy } as const
  })
}) {}
