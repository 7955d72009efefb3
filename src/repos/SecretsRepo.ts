import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import { tenantScope } from "./Tenant"

export interface SecretRow {
  readonly name: string
  readonly ciphertext: string
  readonly updated_at: Date
  readonly updated_by: string | null
}

/** Organization and user secrets as ciphertext; `owner` is '' for the organization's own. */
export class SecretsRepo extends Effect.Service<SecretsRepo>()("sluice/SecretsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)

    const list = (orgId: OrgId, owner: string) =>
      sql<SecretRow>`select name, ciphertext, updated_at, updated_by from secrets where org_id = ${orgId} and user_id = ${owner} order by name`.pipe(withOrg(orgId))

    const find = (orgId: OrgId, owner: string, name: string) =>
      sql<SecretRow>`select name, ciphertext, updated_at, updated_by from secrets where org_id = ${orgId} and user_id = ${owner} and name = ${name}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    /** Sets and removes secrets in one transaction. */
    const apply = (orgId: OrgId, owner: string, by: string, changes: ReadonlyArray<{ readonly name: string; readonly ciphertext: string | null }>) =>
      Effect.forEach(
        changes,
        ({ name, ciphertext }) =>
          ciphertext === null
            ? sql`delete from secrets where org_id = ${orgId} and user_id = ${owner} and name = ${name}`
            : sql`insert into secrets (org_id, user_id, name, ciphertext, updated_by) values (${orgId}, ${owner}, ${name}, ${ciphertext}, ${by})
                on conflict (org_id, user_id, name) do update set ciphertext = excluded.ciphertext, updated_by = excluded.updated_by,
                  updated_at = date_trunc('milliseconds', now())`,
        { discard: true }
      ).pipe(withOrg(orgId))

    /** Replaces a ciphertext (re-encrypted under the current key) unless it changed meanwhile. */
    const replaceCiphertext = (orgId: OrgId, owner: string, name: string, from: string, to: string) =>
      sql`update secrets set ciphertext = ${to} where org_id = ${orgId} and user_id = ${owner} and name = ${name} and ciphertext = ${from}`.pipe(
        Effect.asVoid,
        withOrg(orgId)
      )

    /** Every organization's and user's secrets, for `sluice credentials reencrypt` (system work, across orgs). */
    const listAll = sql<SecretRow & { readonly org_id: OrgId; readonly user_id: string }>`select org_id, user_id, name, ciphertext, updated_at, updated_by from secrets order by org_id, user_id, name`

    return { list, listAll, find, apply, replaceCiphertext } as const
  })
}) {}
