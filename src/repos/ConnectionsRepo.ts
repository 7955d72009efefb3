import { SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schema } from "effect"
import { DbType } from "../domain/Connection"
import { ConnectionId, OrgId } from "../domain/Ids"
import { PiiRule } from "../domain/Pii"
import { conflictOnDuplicate, storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const ConnectionRow = Schema.Struct({
  id: ConnectionId,
  org_id: OrgId,
  name: Schema.String,
  db_type: DbType,
  description: Schema.NullOr(Schema.String),
  tags: Schema.Array(Schema.String),
  settings: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  secrets: Schema.NullOr(Schema.String),
  secret_paths: Schema.Array(Schema.String),
  version: Schema.Number,
  host_key_fingerprint: Schema.NullOr(Schema.String),
  source: Schema.Literal("api", "env"),
  pii_rules: Schema.Array(PiiRule),
  pii_version: Schema.Number,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type ConnectionRow = typeof ConnectionRow.Type

const NewConnectionRow = ConnectionRow.omit("version", "host_key_fingerprint", "pii_rules", "pii_version", "created_at", "updated_at")
export type NewConnectionRow = typeof NewConnectionRow.Type

const EditedFields = NewConnectionRow.omit("id", "org_id", "source")

const ByName = Schema.Struct({ orgId: OrgId, name: Schema.String })

const duplicateName = (name: string) => conflictOnDuplicate(`A connection named "${name}" already exists in this organization`)

export class ConnectionsRepo extends Effect.Service<ConnectionsRepo>()("sluice/ConnectionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("connection store")

    const listPage = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, limit: Schema.Number, after: Schema.NullOr(Schema.String) }),
      Result: ConnectionRow,
      execute: ({ orgId, limit, after }) =>
        sql`select * from connections where org_id = ${orgId}
          ${after === null ? sql`` : sql`and name > ${after}`}
          order by name limit ${limit}`
    })
    const list = Effect.fn("ConnectionsRepo.list")(
      (orgId: OrgId, limit: number, after: string | null) => listPage({ orgId, limit, after }).pipe(withOrg(orgId)),
      failures
    )

    const findByName = SqlSchema.findOne({
      Request: ByName,
      Result: ConnectionRow,
      execute: ({ orgId, name }) => sql`select * from connections where org_id = ${orgId} and name = ${name}`
    })
    const find = Effect.fn("ConnectionsRepo.find")(
      (orgId: OrgId, name: string) => findByName({ orgId, name }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const insertRow = SqlSchema.single({
      Request: NewConnectionRow,
      Result: ConnectionRow,
      execute: (row) => sql`insert into connections ${sql.insert({ ...row, settings: sql.json(row.settings), tags: [...row.tags], secret_paths: [...row.secret_paths] })} returning *`
    })
    const insert = Effect.fn("ConnectionsRepo.insert")((row: NewConnectionRow) => insertRow(row).pipe(duplicateName(row.name), withOrg(row.org_id)), failures)

    const updateRow = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: ConnectionId, row: EditedFields }),
      Result: ConnectionRow,
      execute: ({ orgId, id, row }) =>
        sql`update connections set
            name = ${row.name}, db_type = ${row.db_type}, description = ${row.description}, tags = ${[...row.tags]},
            settings = ${sql.json(row.settings)}, secrets = ${row.secrets}, secret_paths = ${[...row.secret_paths]},
            version = version + 1, host_key_fingerprint = case when settings->'ssh_tunnel' = ${sql.json(row.settings["ssh_tunnel"] ?? null)}
              then host_key_fingerprint end,
            updated_at = date_trunc('milliseconds', now())
          where org_id = ${orgId} and id = ${id} returning *`
    })
    /** Replaces the editable fields; `version` moves on so pools built from the old fields are retired. */
    const update = Effect.fn("ConnectionsRepo.update")(
      (orgId: OrgId, id: ConnectionId, row: typeof EditedFields.Type) =>
        updateRow({ orgId, id, row }).pipe(Effect.map(Option.getOrNull), duplicateName(row.name), withOrg(orgId)),
      failures
    )

    const replaceSecrets = SqlSchema.void({
      Request: Schema.Struct({ orgId: OrgId, id: ConnectionId, previous: Schema.String, next: Schema.String }),
      execute: ({ orgId, id, previous, next }) =>
        sql`update connections set secrets = ${next} where org_id = ${orgId} and id = ${id} and secrets = ${previous}`
    })
    /** A re-encryption under the current key: same plaintext, so pools stay. */
    const replaceCiphertext = Effect.fn("ConnectionsRepo.replaceCiphertext")(
      (orgId: OrgId, id: ConnectionId, previous: string, next: string) => replaceSecrets({ orgId, id, previous, next }).pipe(withOrg(orgId)),
      failures
    )

    const removeByName = SqlSchema.findOne({
      Request: ByName,
      Result: ConnectionRow,
      execute: ({ orgId, name }) => sql`delete from connections where org_id = ${orgId} and name = ${name} returning *`
    })
    const remove = Effect.fn("ConnectionsRepo.remove")(
      (orgId: OrgId, name: string) => removeByName({ orgId, name }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const pinFirstHostKey = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: ConnectionId, fingerprint: Schema.String }),
      Result: Schema.Struct({ host_key_fingerprint: Schema.String }),
      execute: ({ orgId, id, fingerprint }) =>
        sql`update connections set host_key_fingerprint = coalesce(host_key_fingerprint, ${fingerprint})
          where org_id = ${orgId} and id = ${id} returning host_key_fingerprint`
    })
    /** Pins the first SSH host key seen; returns the key pinned, which may be another replica's. */
    const pinHostKey = Effect.fn("ConnectionsRepo.pinHostKey")(
      (orgId: OrgId, id: ConnectionId, fingerprint: string) =>
        pinFirstHostKey({ orgId, id, fingerprint }).pipe(
          Effect.map(Option.match({ onNone: () => null, onSome: (row) => row.host_key_fingerprint })),
          withOrg(orgId)
        ),
      failures
    )

    const replacePiiRules = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: ConnectionId, rules: Schema.Array(PiiRule) }),
      Result: ConnectionRow,
      execute: ({ orgId, id, rules }) =>
        // As JSON text: the driver would send a JavaScript array as a PostgreSQL array.
        sql`update connections set pii_rules = ${JSON.stringify(rules)}::jsonb, pii_version = pii_version + 1
          where org_id = ${orgId} and id = ${id} returning *`
    })
    /** Replaces the PII rules and moves their version on; returns the row, or null when it is gone. */
    const setPiiRules = Effect.fn("ConnectionsRepo.setPiiRules")(
      (orgId: OrgId, id: ConnectionId, rules: ReadonlyArray<PiiRule>) => replacePiiRules({ orgId, id, rules }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const everyConnection = SqlSchema.findAll({
      Request: Schema.Void,
      Result: ConnectionRow,
      execute: () => sql`select * from connections order by org_id, name`
    })
    /** Every org's connections, for the system's own loops (health); never for a request. */
    const listAll = Effect.fn("ConnectionsRepo.listAll")(() => everyConnection(undefined), failures)

    return { list, listAll, find, insert, update, replaceCiphertext, pinHostKey, setPiiRules, remove } as const
  })
}) {}
