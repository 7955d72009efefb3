import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { OrgId, UserId } from "../domain/Ids"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

/** Whose secret: '' for the organization's own, else the user's. */
const SecretOwner = Schema.Union(Schema.Literal(""), UserId)
export type SecretOwner = typeof SecretOwner.Type

const SecretRow = Schema.Struct({
  name: Schema.String,
  ciphertext: Schema.String,
  updated_at: Schema.DateFromSelf,
  updated_by: Schema.NullOr(UserId)
})
export type SecretRow = typeof SecretRow.Type

const StoredSecretRow = Schema.Struct({ ...SecretRow.fields, org_id: OrgId, user_id: SecretOwner })

const Change = Schema.Struct({ name: Schema.String, ciphertext: Schema.NullOr(Schema.String) })

/** Organization and user secrets as ciphertext; `owner` is '' for the organization's own. */
export class SecretsRepo extends Effect.Service<SecretsRepo>()("sluice/SecretsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("secrets")

    const secretsOf = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, owner: SecretOwner }),
      Result: SecretRow,
      execute: ({ orgId, owner }) =>
        sql`select name, ciphertext, updated_at, updated_by from secrets where org_id = ${orgId} and user_id = ${owner} order by name`
    })
    const list = Effect.fn("SecretsRepo.list")((orgId: OrgId, owner: SecretOwner) => secretsOf({ orgId, owner }).pipe(withOrg(orgId)), failures)

    const secretNamed = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, owner: SecretOwner, name: Schema.String }),
      Result: SecretRow,
      execute: ({ orgId, owner, name }) =>
        sql`select name, ciphertext, updated_at, updated_by from secrets where org_id = ${orgId} and user_id = ${owner} and name = ${name}`
    })
    const find = Effect.fn("SecretsRepo.find")(
      (orgId: OrgId, owner: SecretOwner, name: string) => secretNamed({ orgId, owner, name }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const applyChange = SqlSchema.void({
      Request: Schema.Struct({ orgId: OrgId, owner: SecretOwner, by: UserId, change: Change }),
      execute: ({ orgId, owner, by, change: { name, ciphertext } }) =>
        ciphertext === null
          ? sql`delete from secrets where org_id = ${orgId} and user_id = ${owner} and name = ${name}`
          : sql`insert into secrets (org_id, user_id, name, ciphertext, updated_by) values (${orgId}, ${owner}, ${name}, ${ciphertext}, ${by})
              on conflict (org_id, user_id, name) do update set ciphertext = excluded.ciphertext, updated_by = excluded.updated_by,
                updated_at = date_trunc('milliseconds', now())`
    })
    /** Sets and removes secrets in one transaction. */
    const apply = Effect.fn("SecretsRepo.apply")(
      (orgId: OrgId, owner: SecretOwner, by: UserId, changes: ReadonlyArray<typeof Change.Type>) =>
        Effect.forEach(changes, (change) => applyChange({ orgId, owner, by, change }), { discard: true }).pipe(withOrg(orgId)),
      failures
    )

    const replaceIfUnchanged = SqlSchema.void({
      Request: Schema.Struct({ orgId: OrgId, owner: SecretOwner, name: Schema.String, from: Schema.String, to: Schema.String }),
      execute: ({ orgId, owner, name, from, to }) =>
        sql`update secrets set ciphertext = ${to} where org_id = ${orgId} and user_id = ${owner} and name = ${name} and ciphertext = ${from}`
    })
    /** Replaces a ciphertext (re-encrypted under the current key) unless it changed meanwhile. */
    const replaceCiphertext = Effect.fn("SecretsRepo.replaceCiphertext")(
      (orgId: OrgId, owner: SecretOwner, name: string, from: string, to: string) => replaceIfUnchanged({ orgId, owner, name, from, to }).pipe(withOrg(orgId)),
      failures
    )

    const everySecret = SqlSchema.findAll({
      Request: Schema.Void,
      Result: StoredSecretRow,
      execute: () => sql`select org_id, user_id, name, ciphertext, updated_at, updated_by from secrets order by org_id, user_id, name`
    })
    /** Every organization's and user's secrets, for `sluice credentials reencrypt` (system work, across orgs). */
    const listAll = Effect.fn("SecretsRepo.listAll")(() => everySecret(undefined), failures)

    return { list, listAll, find, apply, replaceCiphertext } as const
  })
}) {}
