import type { Effect, Option, Stream } from "effect"
import type { InvalidRequest, NotFound, Unavailable } from "../../src/domain/Errors"

export interface ObjectInfo {
  readonly key: string
  readonly size: number
}

export interface StoredPart {
  readonly part_number: number
  readonly etag: string
  readonly size: number
}

/** S3's rules, kept by every backend so a client written against one works against the other. */
export const MIN_PART_BYTES = 5 * 1024 * 1024
export const MAX_PARTS = 10_000

/**
 * Keys the gateway makes (`evals/<org>/<run>/…`, `uploads/<org>/<id>`): printable, relative, no `.`
 * or `..` segment, so a key is the same file under the filesystem store's root and the same object
 * in a bucket. `~` names a task's later attempt (`task_<id>~2`); it is unreserved in URLs and S3 signing.
 */
export const isObjectKey = (key: string) => /^[A-Za-z0-9_=-][A-Za-z0-9_.=~\/-]{0,1023}$/.test(key) && !key.split("/").some((s) => s === "" || s === "." || s === "..")

/**
 * Where evidence and uploads are kept: a folder under SP_DATA_DIR (self-hosted default) or an
 * S3-compatible bucket. Reads stream; large writes come as multipart uploads, whose parts a client
 * sends straight to the bucket through presigned URLs where the backend offers them.
 */
export interface ObjectBackend {
  readonly kind: "filesystem" | "s3"
  readonly put: (key: string, body: Uint8Array, contentType: string) => Effect.Effect<void, Unavailable>
  readonly get: (key: string) => Effect.Effect<{ readonly size: number; readonly body: Stream.Stream<Uint8Array, Unavailable> }, NotFound | Unavailable>
  /** Bytes `start` to `end` (exclusive) of an object: how an archive's directory and entries are read without fetching it whole. */
  readonly getRange: (key: string, start: number, end: number) => Stream.Stream<Uint8Array, NotFound | Unavailable>
  readonly head: (key: string) => Effect.Effect<Option.Option<ObjectInfo>, Unavailable>
  /** Every object under the prefix, in key order. */
  readonly list: (prefix: string) => Effect.Effect<ReadonlyArray<ObjectInfo>, Unavailable>
  /** Deletes every object under the prefix; how many went. */
  readonly removePrefix: (prefix: string) => Effect.Effect<number, Unavailable>
  readonly createUpload: (key: string) => Effect.Effect<string, Unavailable>
  /** A URL the client PUTs the part (of exactly `size` bytes) to, for `seconds`; none when parts come through the gateway. */
  readonly presignPart: (key: string, uploadId: string, partNumber: number, size: number, seconds: number) => Effect.Effect<Option.Option<string>, Unavailable>
  readonly putPart: <E>(key: string, uploadId: string, partNumber: number, length: number, body: Stream.Stream<Uint8Array, E>) => Effect.Effect<StoredPart, NotFound | InvalidRequest | Unavailable | E>
  readonly listParts: (key: string, uploadId: string) => Effect.Effect<ReadonlyArray<StoredPart>, NotFound | Unavailable>
  readonly completeUpload: (key: string, uploadId: string, parts: ReadonlyArray<{ readonly part_number: number; readonly etag: string }>) => Effect.Effect<ObjectInfo, NotFound | InvalidRequest | Unavailable>
  /** Forgets the upload and its parts; one already gone is no failure. */
  readonly abortUpload: (key: string, uploadId: string) => Effect.Effect<void, Unavailable>
}
