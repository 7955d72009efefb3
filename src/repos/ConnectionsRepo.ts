import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import { tenantScope } from "./Tenant"

export interface ConnectionRow {
  readonly id: string
  readonly org_id: OrgId
  readonly name: string
  readonly db_type: string
  readonly description: string | null
  readonly tags: ReadonlyArray<string>
  readonly settings: Record<string, unknown>
  readonly secrets: string | null
  readonly secret_paths: ReadonlyArray<string>
  readonly version: number
  readonly host_key_fingerprint: string | null
  readonly source: "api" | "env"
  readonly pii_rules: ReadonlyArray<unknown>
  readonly pii_version: number
  readonly created_at: Date
  readonly updated_at: Date
}

export type NewConnectionRow = Omit<ConnectionRow, "version" | "host_key_fingerprint" | "pii_rules" | "pii_version" | "created_at" | "updated_at">

export class ConnectionsRepo extends Effect.Service<ConnectionsRepo>()("sluice/ConnectionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)

    const list = (orgId: OrgId, limit: number, after: string | null) =>
      sql<ConnectionRow>`select * from connections where org_id = ${orgId}
        ${after === null ? sql`` : sql`and name > ${after}`}
        order by name limit ${limit}`.pipe(withOrg(orgId))

    const find = (orgId: OrgId, name: string) =>
      sql<ConnectionRow>`select * from connections where org_id = ${orgId} and name = ${name}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    const insert = (row: NewConnectionRow) =>
      sql<ConnectionRow>`insert into connections ${sql.insert({ ...row, settings: sql.json(row.settings), tags: [...row.tags] })}
        returning *`.pipe(Effect.map((rows) => rows[0]!), withOrg(row.org_id))

    /** Replaces the editable fields; `version` moves on so pools built from the old fields are retired. */
    const update = (orgId: OrgId, id: string, row: Omit<NewConnectionRow, "id" | "org_id" | "source">) =>
      sql<ConnectionRow>`update connections set
          name = ${row.name}, db_type = ${row.db_type}, description = ${row.description}, tags = ${[...row.tags]},
          settings = ${sql.json(row.settings)}, secrets = ${row.secrets}, secret_paths = ${[...row.secret_paths]},
          version = version + 1, host_key_fingerprint = case when settings->'ssh_tunnel' = ${sql.json(row.settings["ssh_tunnel"] ?? null)}
            then host_key_fingerprint end,
          updated_at = date_trunc('milliseconds', now())
        where org_id = ${orgId} and id = ${id} returning *`.pipe(Effect.map((rows) => rows[0] ?? null), withOrg(orgId))

    /** A re-encryption under the current key: same plaintext, so pools stay. */
    const replaceCiphertext = (orgId: OrgId, id: string, previous: string, next: string) =>
      sql`update connections set secrets = ${next} where org_id = ${orgId} and id = ${id} and secrets = ${previous}`.pipe(
        withOrg(orgId)
      )

    const remove = (orgId: OrgId, name: string) =>
      sql<ConnectionRow>`delete from connections where org_id = ${orgId} and name = ${name} returning *`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    /** Pins the first SSH host key seen; returns the key pinned, which may be another replica's. */
    const pinHostKey = (orgId: OrgId, id: string, fingerprint: string) =>
      sql<{ host_key_fingerprint: string }>`update connections
          set host_key_fingerprint = coalesce(host_key_fingerprint, ${fingerprint})
        where org_id = ${orgId} and id = ${id} returning host_key_fingerprint`.pipe(
        Effect.map((rows) => rows[0]?.host_key_fingerprint ?? null),
        withOrg(orgId)
      )

    /** Replaces the PII rules and moves their version on; returns the row, or null when it is gone. */
    const setPiiRules = (orgId: OrgId, id: string, rules: ReadonlyArray<unknown>) =>
      // As JSON text: the driver would send a JavaScript array as a PostgreSQL array.
      sql<ConnectionRow>`update connections set pii_rules = ${JSON.stringify(rules)}::jsonb, pii_version = pii_version + 1
        where org_id = ${orgId} and id = ${id} returning *`.pipe(Effect.map((rows) => rows[0] ?? null), withOrg(orgId))

    /** Every org's connections, for the system's own loops (health); never for a request. */
    const listAll = sql<ConnectionRow>`select * from connections order by org_id, name`

    return { list, listAll, find, insert, update, replaceCiphertext, pinHostKey, setPiiRules, remove } as const
  })
}) {}
