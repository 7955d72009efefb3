import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { KeyId, OrgId, UserId } from "../domain/Ids"
import type { Role, Scope } from "../domain/Scope"
import { tenantScope } from "./Tenant"

export interface ApiKeyRow {
  readonly id: KeyId
  readonly org_id: OrgId
  readonly user_id: UserId
  readonly name: string
  readonly prefix: string
  readonly scopes: ReadonlyArray<Scope>
  readonly created_at: Date
  readonly last_used_at: Date | null
  readonly expires_at: Date | null
}

export interface KeyCredentialRow extends ApiKeyRow {
  readonly key_hash: string
  readonly role: Role | null
}

const COLUMNS = "k.id, k.org_id, k.user_id, k.name, k.prefix, k.scopes, k.created_at, k.last_used_at, k.expires_at"

export class ApiKeysRepo extends Effect.Service<ApiKeysRepo>()("sluice/ApiKeysRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const columns = sql.unsafe(COLUMNS)

    const insert = (row: Omit<ApiKeyRow, "created_at" | "last_used_at"> & { readonly key_hash: string }) =>
      sql<ApiKeyRow>`insert into api_keys ${sql.insert(row)}
        returning ${sql.unsafe(COLUMNS.replaceAll("k.", ""))}`.pipe(
        Effect.map((rows) => rows[0]!),
        withOrg(row.org_id)
      )

    const list = (orgId: OrgId, limit: number, after: readonly [Date, string] | null) =>
      sql<ApiKeyRow>`select ${columns} from api_keys k
        where k.org_id = ${orgId}
        ${after ? sql`and (k.created_at, k.id) < (${after[0]}, ${after[1]})` : sql``}
        order by k.created_at desc, k.id desc limit ${limit}`.pipe(withOrg(orgId))

    /** Deletes a key, keeping its hash and org so later requests with it are still attributed. */
    const remove = (orgId: OrgId, id: KeyId) =>
      sql<{ key_hash: string }>`with gone as (delete from api_keys where org_id = ${orgId} and id = ${id} returning org_id, key_hash)
        insert into api_key_tombstones (key_hash, org_id) select key_hash, org_id from gone
        on conflict (key_hash) do nothing returning key_hash`.pipe(
        Effect.map((rows) => rows.length > 0),
        withOrg(orgId)
      )

    /** System lookup by hash across orgs: the only way a raw key becomes a principal. */
    const findByHash = (keyHash: string) =>
      sql<KeyCredentialRow>`select ${columns}, k.key_hash, m.role from api_keys k
        left join memberships m on m.org_id = k.org_id and m.user_id = k.user_id
        where k.key_hash = ${keyHash}`.pipe(Effect.map((rows) => rows[0] ?? null))

    /** System lookup by id, for work that acts with a key long after its request (an agent run's next step). */
    const findById = (id: KeyId) =>
      sql<KeyCredentialRow>`select ${columns}, k.key_hash, m.role from api_keys k
        left join memberships m on m.org_id = k.org_id and m.user_id = k.user_id
        where k.id = ${id}`.pipe(Effect.map((rows) => rows[0] ?? null))

    /** System lookup: the org of a key that exists or was deleted, whether or not it still opens anything. */
    const orgOfHash = (keyHash: string) =>
      sql<{ org_id: OrgId }>`select org_id from api_keys where key_hash = ${keyHash}
        union all select org_id from api_key_tombstones where key_hash = ${keyHash} limit 1`.pipe(Effect.map((rows) => rows[0]?.org_id ?? null))

    const touch = (id: KeyId, at: Date) => sql`update api_keys set last_used_at = ${at} where id = ${id}`

    /** Whether any key made by a person exists (the local key does not count). */
    const userKeysExist = sql<{ exists: boolean }>`select exists (select 1 from api_keys where kind = 'user') as exists`.pipe(
      Effect.map((rows) => rows[0]?.exists === true)
    )

    /**
     * Registers a local key once, idempotent across restarts and race-free across replicas: named
     * `name`, or `name prefix` when another replica's key (each data dir has its own) holds that name.
     * Whether the key is registered now.
     */
    const ensureLocalKey = (row: Omit<ApiKeyRow, "created_at" | "last_used_at" | "expires_at"> & { readonly key_hash: string }) => {
      const register = (name: string) =>
        sql`insert into api_keys ${sql.insert({ ...row, name, kind: "local" })} on conflict do nothing returning id`
      return register(row.name).pipe(
        Effect.flatMap((rows) => (rows.length > 0 ? Effect.void : register(`${row.name} ${row.prefix}`))),
        Effect.zipRight(sql`select 1 from api_keys where key_hash = ${row.key_hash}`),
        Effect.map((rows) => rows.length > 0)
      )
    }

    const summary = (orgId: OrgId) =>
      sql<{ total: number; admin: number; expiring_7d: number; never_used: number }>`select
        count(*)::int as total,
        count(*) filter (where 'admin' = any(scopes))::int as admin,
        count(*) filter (where expires_at is not null and expires_at < now() + interval '7 days')::int as expiring_7d,
        count(*) filter (where last_used_at is null)::int as never_used
        from api_keys where org_id = ${orgId}`.pipe(Effect.map((rows) => rows[0]!), withOrg(orgId))

    return { insert, list, remove, findByHash, findById, orgOfHash, touch, userKeysExist, ensureLocalKey, summary } as const
  })
}) {}
