import { Schema } from "effect"
import { noNul } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const UPLOAD_PART_BYTES = 64 * 1024 * 1024
export const UPLOAD_MAX_BYTES = 8 * 1024 * 1024 * 1024
export const OPEN_UPLOADS_PER_USER = 3
/** Completed archives a user keeps at once (each up to 8 GiB for 7 days); abort deletes one sooner. */
export const KEPT_ARCHIVES_PER_USER = 10
export const UPLOAD_SESSION_HOURS = 6
export const UPLOAD_ARCHIVE_DAYS = 7

export const UploadId = Schema.String.pipe(Schema.pattern(/^upl_[0-9a-f]{32}$/, { message: () => "not an upload's id" }))

/** Begins an upload of an eval-set archive, or (with `upload_id`) picks an open one up where it stopped. */
export const InitiateUpload = Schema.Union(
  Schema.Struct({
    file_name: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.() -]{1,200}\.zip$/, { message: () => "file_name is the archive's name, ending in .zip" }), noNul("file_name")),
    size: Schema.Int.pipe(Schema.between(1, UPLOAD_MAX_BYTES, { message: () => `size is the archive's size in bytes, at most ${UPLOAD_MAX_BYTES} (8 GiB)` }))
  }).annotations(strict),
  Schema.Struct({ upload_id: UploadId }).annotations(strict)
)
export type InitiateUpload = typeof InitiateUpload.Type

export const UploadById = Schema.Struct({ upload_id: UploadId }).annotations(strict)

export const UploadStatus = Schema.Literal("open", "complete", "aborted", "expired")

/** Where one part goes: a presigned URL of the store (no key; the bytes never cross the gateway) or the gateway's part route (the caller's key). */
export const UploadTarget = Schema.Struct({
  part_number: Schema.Int,
  size: Schema.Int,
  method: Schema.Literal("PUT"),
  url: Schema.String,
  auth: Schema.Literal("presigned", "api_key")
})

export const UploadSession = Schema.Struct({
  upload_id: Schema.String,
  file_name: Schema.String,
  status: UploadStatus,
  size: Schema.Number,
  part_size: Schema.Number,
  part_count: Schema.Int,
  /** Parts the store holds already (an upload picked up again sends only the others). */
  stored_parts: Schema.Array(Schema.Struct({ part_number: Schema.Int, size: Schema.Number, etag: Schema.String })),
  /** Where to send each part not yet stored; empty once complete. */
  parts: Schema.Array(UploadTarget),
  expires_at: Schema.String
})
export type UploadSession = typeof UploadSession.Type
