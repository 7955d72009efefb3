import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { UploadStatus } from "../domain/EvalUpload"
import { OrgId } from "../domain/Ids"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const UploadRow = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  user_id: Schema.String,
  file_name: Schema.String,
  object_key: Schema.String,
  store_upload_id: Schema.String,
  size: Schema.NumberFromString,
  part_size: Schema.NumberFromString,
  status: UploadStatus,
  created_at: Schema.DateFromSelf,
  expires_at: Schema.DateFromSelf,
  completed_at: Schema.NullOr(Schema.DateFromSelf)
})
export type EvalUploadRow = typeof UploadRow.Type

const NewUpload = Schema.Struct({
  id: Schema.String,
  user_id: Schema.String,
  file_name: Schema.String,
  object_key: Schema.String,
  store_upload_id: Schema.String,
  size: Schema.Number,
  part_size: Schema.Number,
  expires_at: Schema.DateFromSelf
})

// Sizes are bigint: read as text, so no driver's idea of a 64-bit integer is involved.
const COLUMNS = "id, org_id, user_id, file_name, object_key, store_upload_id, size::text as size, part_size::text as part_size, status, created_at, expires_at, completed_at"

/** Eval-set uploads, per org. */
export class EvalUploadsRepo extends Effect.Service<EvalUploadsRepo>()("sluice/EvalUploadsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("eval uploads store")

    const countOpen = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, userId: Schema.String, now: Schema.DateFromSelf }),
      Result: Schema.Struct({ open: Schema.Number, kept: Schema.Number }),
      execute: ({ orgId, userId, now }) =>
        sql`select count(*) filter (where status = 'open')::int as open, count(*) filter (where status = 'complete')::int as kept
          from eval_uploads where org_id = ${orgId} and user_id = ${userId} and status in ('open', 'complete') and expires_at > ${now}`
    })
    const insertUpload = SqlSchema.single({
      Request: Schema.Struct({
        orgId: OrgId,
        row: NewUpload
      }),
      Result: UploadRow,
      execute: ({ orgId, row }) =>
        sql`insert into eval_uploads ${sql.insert({ ...row, org_id: orgId, status: "open" })} returning ${sql.unsafe(COLUMNS)}`
    })
    /**
     * Records a new open upload unless the user holds `limits.open` open uploads or `limits.kept`
     * archives already (the reason then). One user's initiates take turns (a transaction lock on org
     * and user), so two at once cannot both pass the count.
     */
    const insertIfUnder = Effect.fn("EvalUploadsRepo.insertIfUnder")(
      (orgId: OrgId, row: typeof NewUpload.Type, limits: { readonly open: number; readonly kept: number }, now: Date) =>
        Effect.gen(function* () {
          yield* sql`select pg_advisory_xact_lock(hashtext(${`eval_uploads:${orgId}:${row.user_id}`}))`
          const { open, kept } = yield* countOpen({ orgId, userId: row.user_id, now })
          if (open >= limits.open) return "open" as const
          if (kept >= limits.kept) return "kept" as const
          return yield* insertUpload({ orgId, row })
        }).pipe(withOrg(orgId)),
      failures
    )

    const findUpload = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: Schema.String }),
      Result: UploadRow,
      execute: ({ orgId, id }) => sql`select ${sql.unsafe(COLUMNS)} from eval_uploads where org_id = ${orgId} and id = ${id}`
    })
    const get = Effect.fn("EvalUploadsRepo.get")((orgId: OrgId, id: string) => findUpload({ orgId, id }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const moveUpload = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: Schema.String, from: UploadStatus, to: UploadStatus, expiresAt: Schema.NullOr(Schema.DateFromSelf) }),
      Result: UploadRow,
      execute: ({ orgId, id, from, to, expiresAt }) =>
        sql`update eval_uploads set status = ${to}, ${sql.unsafe(to === "complete" ? "completed_at = date_trunc('milliseconds', now())," : "")} expires_at = coalesce(${expiresAt}, expires_at)
          where org_id = ${orgId} and id = ${id} and status = ${from} returning ${sql.unsafe(COLUMNS)}`
    })
    /** Moves an upload from one status to the next (and its expiry, if given); null when it was not in `from`. */
    const move = Effect.fn("EvalUploadsRepo.move")(
      (orgId: OrgId, id: string, from: typeof UploadStatus.Type, to: typeof UploadStatus.Type, expiresAt: Date | null) =>
        moveUpload({ orgId, id, from, to, expiresAt }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const findExpired = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.DateFromSelf, limit: Schema.Number }),
      Result: UploadRow,
      execute: ({ now, limit }) => sql`select ${sql.unsafe(COLUMNS)} from eval_uploads where status in ('open', 'complete') and expires_at <= ${now} order by expires_at limit ${limit}`
    })
    /** Every org's uploads past their expiry (system work: the expiry loop). */
    const expired = Effect.fn("EvalUploadsRepo.expired")((now: Date, limit: number) => findExpired({ now, limit }), failures)

    return { insertIfUnder, get, move, expired } as const
  })
}) {}
