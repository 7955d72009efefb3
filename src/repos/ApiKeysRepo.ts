import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { KeyId, OrgId, UserId } from "../domain/Ids"
import { Role, Scope } from "../domain/Scope"
import { conflictOnDuplicate, storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const ApiKeyRow = Schema.Struct({
  id: KeyId,
  org_id: OrgId,
  user_id: UserId,
  name: Schema.String,
  prefix: Schema.String,
  scopes: Schema.Array(Scope),
  created_at: Schema.DateFromSelf,
  last_used_at: Schema.NullOr(Schema.DateFromSelf),
  expires_at: Schema.NullOr(Schema.DateFromSelf),
  connections: Schema.NullOr(Schema.Array(Schema.String)),
  branch_project: Schema.NullOr(Schema.String),
  branch_name: Schema.NullOr(Schema.String),
  knowledge_overlay: Schema.NullOr(Schema.Array(Schema.String))
})
export type ApiKeyRow = typeof ApiKeyRow.Type

const KeyCredentialRow = Schema.Struct({ ...ApiKeyRow.fields, key_hash: Schema.String, role: Schema.NullOr(Role) })
export type KeyCredentialRow = typeof KeyCredentialRow.Type

const NewKey = Schema.Struct({
  id: KeyId,
  org_id: OrgId,
  user_id: UserId,
  name: Schema.String,
  prefix: Schema.String,
  scopes: Schema.Array(Scope),
  expires_at: Schema.NullOr(Schema.DateFromSelf),
  connections: Schema.NullOr(Schema.Array(Schema.String)),
  branch_project: Schema.NullOr(Schema.String),
  branch_name: Schema.NullOr(Schema.String),
  knowledge_overlay: Schema.NullOr(Schema.Array(Schema.String)),
  key_hash: Schema.String
})
const LocalKey = NewKey.omit("expires_at", "connections", "branch_project", "branch_name", "knowledge_overlay")

const KeySummary = Schema.Struct({ total: Schema.Number, admin: Schema.Number, expiring_7d: Schema.Number, never_used: Schema.Number })

const COLUMNS = "k.id, k.org_id, k.user_id, k.name, k.prefix, k.scopes, k.created_at, k.last_used_at, k.expires_at, k.connections, k.branch_project, k.branch_name, k.knowledge_overlay"

export class ApiKeysRepo extends Effect.Service<ApiKeysRepo>()("sluice/ApiKeysRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const columns = sql.unsafe(COLUMNS)
    const failures = storeErrors("key store")

    const insertKey = SqlSchema.single({
      Request: NewKey,
      Result: ApiKeyRow,
      execute: (row) => sql`insert into api_keys ${sql.insert(row)} returning ${sql.unsafe(COLUMNS.replaceAll("k.", ""))}`
    })
    const insert = Effect.fn("ApiKeysRepo.insert")(
      (row: typeof NewKey.Type) =>
        insertKey(row).pipe(conflictOnDuplicate(`A key named "${row.name}" already exists in this organization`), withOrg(row.org_id)),
      failures
    )

    const listKeys = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, limit: Schema.Number, after: Schema.NullOr(Schema.Tuple(Schema.DateFromSelf, KeyId)) }),
      Result: ApiKeyRow,
      execute: ({ orgId, limit, after }) =>
        sql`select ${columns} from api_keys k
          where k.org_id = ${orgId}
          ${after ? sql`and (k.created_at, k.id) < (${after[0]}, ${after[1]})` : sql``}
          order by k.created_at desc, k.id desc limit ${limit}`
    })
    const list = Effect.fn("ApiKeysRepo.list")(
      (orgId: OrgId, limit: number, after: readonly [Date, KeyId] | null) => listKeys({ orgId, limit, after }).pipe(withOrg(orgId)),
      failures
    )

    const removeKey = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: KeyId }),
      Result: Schema.Struct({ key_hash: Schema.String }),
      execute: ({ orgId, id }) =>
        sql`with gone as (delete from api_keys where org_id = ${orgId} and id = ${id} returning org_id, key_hash)
          insert into api_key_tombstones (key_hash, org_id) select key_hash, org_id from gone
          on conflict (key_hash) do nothing returning key_hash`
    })
    /** Deletes a key, keeping its hash and org so later requests with it are still attributed. */
    const remove = Effect.fn("ApiKeysRepo.remove")(
      (orgId: OrgId, id: KeyId) => removeKey({ orgId, id }).pipe(Effect.map(Option.isSome), withOrg(orgId)),
      failures
    )

    /** Deletes the org's keys whose name starts with `prefix` (a job's own keys), tombstoned as `remove` does; how many went. */
    const removeNamed = Effect.fn("ApiKeysRepo.removeNamed")(
      (orgId: OrgId, prefix: string) =>
        sql`with gone as (delete from api_keys where org_id = ${orgId} and starts_with(name, ${prefix}) returning org_id, key_hash),
            kept as (insert into api_key_tombstones (key_hash, org_id) select key_hash, org_id from gone on conflict (key_hash) do nothing)
          select count(*)::int as n from gone`.pipe(
          Effect.map((rows) => Number((rows[0] as { n?: number } | undefined)?.n ?? 0)),
          withOrg(orgId)
        ),
      failures
    )

    // A key with its hash and its holder's role: what a credential is checked against.
    const credentials = sql`select ${columns}, k.key_hash, m.role from api_keys k
      left join memberships m on m.org_id = k.org_id and m.user_id = k.user_id`
    const credentialByHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: KeyCredentialRow,
      execute: (keyHash) => sql`${credentials} where k.key_hash = ${keyHash}`
    })
    /** System lookup by hash across orgs: the only way a raw key becomes a principal. */
    const findByHash = Effect.fn("ApiKeysRepo.findByHash")((keyHash: string) => credentialByHash(keyHash).pipe(Effect.map(Option.getOrNull)), failures)

    const credentialById = SqlSchema.findOne({
      Request: KeyId,
      Result: KeyCredentialRow,
      execute: (id) => sql`${credentials} where k.id = ${id}`
    })
    /** System lookup by id, for work that acts with a key long after its request (an agent run's next step). */
    const findById = Effect.fn("ApiKeysRepo.findById")((id: KeyId) => credentialById(id).pipe(Effect.map(Option.getOrNull)), failures)

    const orgByHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ org_id: OrgId }),
      execute: (keyHash) =>
        sql`select org_id from api_keys where key_hash = ${keyHash}
          union all select org_id from api_key_tombstones where key_hash = ${keyHash} limit 1`
    })
    /** System lookup: the org of a key that exists or was deleted, whether or not it still opens anything. */
    const orgOfHash = Effect.fn("ApiKeysRepo.orgOfHash")(
      (keyHash: string) => orgByHash(keyHash).pipe(Effect.map(Option.match({ onNone: () => null, onSome: (row) => row.org_id }))),
      failures
    )

    const touchKey = SqlSchema.void({
      Request: Schema.Struct({ id: KeyId, at: Schema.DateFromSelf }),
      execute: ({ id, at }) => sql`update api_keys set last_used_at = ${at} where id = ${id}`
    })
    const touch = Effect.fn("ApiKeysRepo.touch")((id: KeyId, at: Date) => touchKey({ id, at }), failures)

    const anyUserKey = SqlSchema.single({
      Request: Schema.Void,
      Result: Schema.Struct({ exists: Schema.Boolean }),
      execute: () => sql`select exists (select 1 from api_keys where kind = 'user') as exists`
    })
    /** Whether any key made by a person exists (the local key does not count). */
    const userKeysExist = Effect.fn("ApiKeysRepo.userKeysExist")(() => anyUserKey(undefined).pipe(Effect.map((row) => row.exists)), failures)

    const registerLocalKey = SqlSchema.findOne({
      Request: LocalKey,
      Result: Schema.Struct({ id: KeyId }),
      execute: (row) => sql`insert into api_keys ${sql.insert({ ...row, kind: "local" })} on conflict do nothing returning id`
    })
    const keyWithHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ id: KeyId }),
      execute: (keyHash) => sql`select id from api_keys where key_hash = ${keyHash}`
    })
    /**
     * Registers a local key once, idempotent across restarts and race-free across replicas: named
     * `name`, or `name prefix` when another replica's key (each data dir has its own) holds that name.
     * Whether the key is registered now.
     */
    const ensureLocalKey = Effect.fn("ApiKeysRepo.ensureLocalKey")(
      (row: typeof LocalKey.Type) =>
        registerLocalKey(row).pipe(
          Effect.flatMap((registered) => (Option.isSome(registered) ? Effect.void : registerLocalKey({ ...row, name: `${row.name} ${row.prefix}` }))),
          Effect.zipRight(keyWithHash(row.key_hash)),
          Effect.map(Option.isSome)
        ),
      failures
    )

    const summarize = SqlSchema.single({
      Request: OrgId,
      Result: KeySummary,
      execute: (orgId) =>
        sql`select
          count(*)::int as total,
          count(*) filter (where 'admin' = any(scopes))::int as admin,
          count(*) filter (where expires_at is not null and expires_at < now() + interval '7 days')::int as expiring_7d,
          count(*) filter (where last_used_at is null)::int as never_used
          from api_keys where org_id = ${orgId}`
    })
    const summary = Effect.fn("ApiKeysRepo.summary")((orgId: OrgId) => summarize(orgId).pipe(withOrg(orgId)), failures)

    return { insert, list, remove, removeNamed, findByHash, findById, orgOfHash, touch, userKeysExist, ensureLocalKey, summary } as const
  })
}) {}
