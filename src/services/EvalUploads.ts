import { randomBytes } from "node:crypto"
import { Clock, Effect, Option, type Stream } from "effect"
import { ObjectStore } from "../../layers/ObjectStore"
import type { ObjectBackend } from "../../layers/objects/ObjectBackend"
import {
  type InitiateUpload,
  KEPT_ARCHIVES_PER_USER,
  OPEN_UPLOADS_PER_USER,
  UPLOAD_ARCHIVE_DAYS,
  UPLOAD_PART_BYTES,
  UPLOAD_SESSION_HOURS,
  type UploadSession
} from "../domain/EvalUpload"
import { Conflict, InvalidRequest, NotFound } from "../domain/Errors"
import { OrgId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { type EvalUploadRow, EvalUploadsRepo } from "../repos/EvalUploadsRepo"

const HOUR = 3_600_000
const noUpload = (id: string) => new NotFound({ message: `There is no open upload ${id} of yours (uploads expire ${UPLOAD_SESSION_HOURS} hours after they begin)` })
const partCount = (row: { readonly size: number; readonly part_size: number }) => Math.ceil(row.size / row.part_size)
/** The size part `n` must have: the part size, except the last, which holds the rest. */
const partSize = (row: { readonly size: number; readonly part_size: number }, n: number) => (n < partCount(row) ? row.part_size : row.size - row.part_size * (partCount(row) - 1))

/**
 * Eval-set archives (zip, up to 8 GiB) uploaded in 64 MiB parts: straight to an S3 bucket through
 * presigned part URLs (the bytes never cross the gateway), or through the gateway's part route into
 * the filesystem store, streamed to disk. An upload picks up where it stopped from the parts the
 * store holds; 3 open per user; open ones expire after 6 hours, completed archives after 7 days.
 * Not staff- or allow-list-gated: anyone with write may upload a set.
 */
export class EvalUploads extends Effect.Service<EvalUploads>()("sluice/EvalUploads", {
  effect: Effect.gen(function* () {
    const repo = yield* EvalUploadsRepo
    const objects = yield* ObjectStore

    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    /** The caller's own upload, open and unexpired. */
    const openUpload = (principal: Principal, id: string) =>
      Effect.gen(function* () {
        const row = yield* repo.get(principal.orgId, id)
        const at = yield* now
        if (row === null || row.user_id !== principal.userId || row.status !== "open" || row.expires_at <= at) return yield* noUpload(id)
        return row
      })

    const sessionOf = (backend: ObjectBackend, row: EvalUploadRow) =>
      Effect.gen(function* () {
        const stored = row.status === "open" ? yield* backend.listParts(row.object_key, row.store_upload_id) : []
        const have = new Set(stored.map((p) => p.part_number))
        const secondsLeft = Math.max(1, Math.floor((row.expires_at.getTime() - (yield* now).getTime()) / 1000))
        const parts = row.status !== "open"
          ? []
          : yield* Effect.forEach(
              Array.from({ length: partCount(row) }, (_, i) => i + 1).filter((n) => !have.has(n)),
              (n) =>
                backend.presignPart(row.object_key, row.store_upload_id, n, partSize(row, n), Math.min(secondsLeft, UPLOAD_SESSION_HOURS * 3600)).pipe(
                  Effect.map((url) =>
                    Option.match(url, {
                      onSome: (presigned) => ({ part_number: n, size: partSize(row, n), method: "PUT" as const, url: presigned, auth: "presigned" as const }),
                      onNone: () => ({ part_number: n, size: partSize(row, n), method: "PUT" as const, url: `/api/evals/upload/${row.id}/parts/${n}`, auth: "api_key" as const })
                    })
                  )
                )
            )
        return {
          upload_id: row.id,
          file_name: row.file_name,
          status: row.status,
          size: row.size,
          part_size: row.part_size,
          part_count: partCount(row),
          stored_parts: stored.map((p) => ({ part_number: p.part_number, size: p.size, etag: p.etag })),
          parts,
          expires_at: row.expires_at.toISOString()
        } satisfies UploadSession
      }).pipe(Effect.catchTag("NotFound", () => Effect.fail(noUpload(row.id))))

    const initiate = Effect.fn("EvalUploads.initiate")(function* (principal: Principal, input: InitiateUpload) {
      const backend = yield* objects.backend
      if ("upload_id" in input) return yield* sessionOf(backend, yield* openUpload(principal, input.upload_id))
      const id = `upl_${randomBytes(16).toString("hex")}`
      const key = `uploads/${principal.orgId}/${id}.zip`
      const at = yield* now
      const storeUploadId = yield* backend.createUpload(key)
      const row = yield* repo
        .insertIfUnder(
          principal.orgId,
          { id, user_id: principal.userId, file_name: input.file_name, object_key: key, store_upload_id: storeUploadId, size: input.size, part_size: UPLOAD_PART_BYTES, expires_at: new Date(at.getTime() + UPLOAD_SESSION_HOURS * HOUR) },
          { open: OPEN_UPLOADS_PER_USER, kept: KEPT_ARCHIVES_PER_USER },
          at
        )
        .pipe(Effect.onError(() => backend.abortUpload(key, storeUploadId).pipe(Effect.ignoreLogged)))
      if (typeof row === "string") {
        yield* backend.abortUpload(key, storeUploadId).pipe(Effect.ignoreLogged)
        return yield* new Conflict({
          message: row === "open"
            ? `You have ${OPEN_UPLOADS_PER_USER} uploads open: complete or abort one (an upload expires ${UPLOAD_SESSION_HOURS} hours after it began)`
            : `You keep ${KEPT_ARCHIVES_PER_USER} completed archives: abort one you no longer need (each is deleted ${UPLOAD_ARCHIVE_DAYS} days after completion)`
        })
      }
      return yield* sessionOf(backend, row)
    })

    /** One part through the gateway (the filesystem store), streamed to disk; its size must be the one the upload gave it. */
    const putPart = Effect.fn("EvalUploads.putPart")(function* <E>(principal: Principal, id: string, partNumber: number, length: number, body: Stream.Stream<Uint8Array, E>) {
      const backend = yield* objects.backend
      const row = yield* openUpload(principal, id)
      if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > partCount(row)) return yield* new InvalidRequest({ message: `This upload has parts 1 to ${partCount(row)}` })
      const expected = partSize(row, partNumber)
      if (length !== expected) return yield* new InvalidRequest({ message: `Part ${partNumber} is ${expected} bytes (Content-Length said ${length})` })
      return yield* backend.putPart(row.object_key, row.store_upload_id, partNumber, length, body)
    })

    const complete = Effect.fn("EvalUploads.complete")(function* (principal: Principal, id: string) {
      const backend = yield* objects.backend
      const row = yield* openUpload(principal, id)
      const stored = new Map((yield* backend.listParts(row.object_key, row.store_upload_id)).map((p) => [p.part_number, p]))
      const parts = Array.from({ length: partCount(row) }, (_, i) => i + 1).map((n) => ({ n, part: stored.get(n) }))
      const missing = parts.filter(({ part }) => part === undefined).map(({ n }) => n)
      if (missing.length > 0) return yield* new InvalidRequest({ message: `Parts ${missing.slice(0, 20).join(", ")}${missing.length > 20 ? ", …" : ""} are not stored yet: send them, then complete` })
      const wrong = parts.find(({ n, part }) => part!.size !== partSize(row, n))
      if (wrong !== undefined) return yield* new InvalidRequest({ message: `Part ${wrong.n} is ${wrong.part!.size} bytes, not ${partSize(row, wrong.n)}: send it again` })
      yield* backend.completeUpload(row.object_key, row.store_upload_id, parts.map(({ part }) => ({ part_number: part!.part_number, etag: part!.etag })))
      const at = yield* now
      const done = yield* repo.move(principal.orgId, id, "open", "complete", new Date(at.getTime() + UPLOAD_ARCHIVE_DAYS * 24 * HOUR))
      // Aborted while it was being assembled: the archive goes with it, or nothing would ever expire it.
      if (done === null) return yield* Effect.zipRight(backend.removePrefix(row.object_key), noUpload(id))
      return yield* sessionOf(backend, done)
    })

    /** Forgets an open upload and its parts, or deletes a completed archive of the caller's. */
    const abort = Effect.fn("EvalUploads.abort")(function* (principal: Principal, id: string) {
      const backend = yield* objects.backend
      const found = yield* repo.get(principal.orgId, id)
      const row = found !== null && found.user_id === principal.userId && found.status === "complete" ? found : yield* openUpload(principal, id)
      if (row.status === "open") yield* backend.abortUpload(row.object_key, row.store_upload_id)
      const aborted = yield* repo.move(principal.orgId, id, row.status, "aborted", null)
      if (aborted === null) return yield* noUpload(id)
      // A complete racing this one may have assembled the archive already.
      yield* backend.removePrefix(row.object_key)
      return yield* sessionOf(backend, aborted)
    })

    /** A completed archive of the organization (any user's): where it is in the store. */
    const archive = Effect.fn("EvalUploads.archive")(function* (orgId: OrgId, id: string) {
      const row = yield* repo.get(orgId, id)
      if (row === null || row.status !== "complete" || row.expires_at <= (yield* now)) return yield* new NotFound({ message: `There is no completed upload ${id} (archives are kept ${UPLOAD_ARCHIVE_DAYS} days)` })
      return { key: row.object_key, size: row.size, backend: yield* objects.backend }
    })

    /** Aborts open uploads past their 6 hours and deletes archives past their 7 days, every organization's; how many. */
    const expire = Effect.gen(function* () {
      if (!objects.configured) return 0
      const backend = yield* objects.backend
      const due = yield* repo.expired(yield* now, 500)
      let expired = 0
      for (const row of due) {
        // One the store cannot delete now is tried again next sweep; it does not hold up the others.
        yield* (row.status === "open" ? backend.abortUpload(row.object_key, row.store_upload_id) : backend.removePrefix(row.object_key)).pipe(
          Effect.zipRight(repo.move(OrgId.make(row.org_id), row.id, row.status, "expired", null)),
          Effect.tap(() => Effect.sync(() => void expired++)),
          Effect.catchAll((error) => Effect.logWarning(`eval upload ${row.id} could not be expired yet`, error.message))
        )
      }
      return expired
    })

    return { initiate, putPart, complete, abort, archive, expire } as const
  }),
  dependencies: [EvalUploadsRepo.Default, ObjectStore.Default]
}) {}
