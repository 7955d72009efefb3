import type { Readable } from "node:stream"
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { NodeStream } from "@effect/platform-node"
import { Effect, Option, Stream } from "effect"
import { InvalidRequest, NotFound, Unavailable } from "../../src/domain/Errors"
import { isObjectKey, MAX_PARTS, type ObjectBackend, type ObjectInfo, type StoredPart } from "./ObjectBackend"

export interface S3Settings {
  readonly bucket: string
  readonly region: string
  /** An S3-compatible store's URL; none: AWS itself. */
  readonly endpoint: string | null
  readonly forcePathStyle: boolean
  /** None: the SDK's own chain (environment, instance role). */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | null
}

// The store's own codes that mean the request, not the store, was wrong.
const REFUSALS = new Set(["InvalidPart", "InvalidPartOrder", "EntityTooSmall", "EntityTooLarge", "InvalidArgument", "IncompleteBody", "KeyTooLongError"])
const MISSING = new Set(["NoSuchKey", "NoSuchUpload", "NotFound"])

/**
 * Any S3-compatible bucket through the AWS SDK. Checksums only where the API requires them: stores
 * that speak S3 but not its newer flexible checksums (most of them) take every request.
 */
export const s3Objects = (settings: S3Settings): ObjectBackend => {
  const client = new S3Client({
    region: settings.region,
    ...(settings.endpoint === null ? {} : { endpoint: settings.endpoint }),
    forcePathStyle: settings.forcePathStyle,
    ...(settings.credentials === null ? {} : { credentials: { ...settings.credentials } }),
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 3
  })
  const Bucket = settings.bucket
  const send = <A>(what: string, request: (signal: AbortSignal) => Promise<A>) =>
    Effect.tryPromise({ try: request, catch: (error) => error }).pipe(
      Effect.catchAll((error): Effect.Effect<never, NotFound | InvalidRequest | Unavailable> => {
        const code = error instanceof S3ServiceException ? error.name : null
        if (code !== null && MISSING.has(code)) return Effect.fail(new NotFound({ message: code === "NoSuchUpload" ? "No such upload: it was completed, aborted or never begun" : "No such object" }))
        if (code !== null && REFUSALS.has(code)) return Effect.fail(new InvalidRequest({ message: `The object store refused to ${what}: ${error instanceof Error ? error.message : code}` }))
        return Effect.logWarning(`object store: ${what} failed`, code ?? (error instanceof Error ? error.message : String(error))).pipe(
          Effect.zipRight(Effect.fail(new Unavailable({ message: `The object store could not ${what}${code === null ? "" : ` (${code})`}` })))
        )
      })
    )
  const unavailable = <A, R>(effect: Effect.Effect<A, NotFound | InvalidRequest | Unavailable, R>) =>
    Effect.catchTags(effect, { NotFound: () => Effect.fail(new Unavailable({ message: "The object store lost an object it had listed" })), InvalidRequest: (e) => Effect.fail(new Unavailable({ message: e.message })) })
  const keyed = (key: string) => (isObjectKey(key) ? Effect.void : Effect.fail(new InvalidRequest({ message: "not an object key" })))

  const list = (prefix: string) =>
    unavailable(
      Effect.gen(function* () {
        const found: Array<ObjectInfo> = []
        let token: string | undefined
        do {
          const page = yield* send("list objects", (abortSignal) => client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, ...(token === undefined ? {} : { ContinuationToken: token }) }), { abortSignal }))
          for (const o of page.Contents ?? []) if (o.Key !== undefined) found.push({ key: o.Key, size: o.Size ?? 0 })
          token = page.IsTruncated === true ? page.NextContinuationToken : undefined
        } while (token !== undefined)
        return found
      })
    )
  const partsOf = (key: string, uploadId: string) =>
    Effect.gen(function* () {
      const parts: Array<StoredPart> = []
      let marker: string | undefined
      do {
        const page = yield* send("list an upload's parts", (abortSignal) =>
          client.send(new ListPartsCommand({ Bucket, Key: key, UploadId: uploadId, ...(marker === undefined ? {} : { PartNumberMarker: marker }) }), { abortSignal })
        )
        for (const p of page.Parts ?? []) parts.push({ part_number: p.PartNumber ?? 0, etag: (p.ETag ?? "").replace(/"/g, ""), size: p.Size ?? 0 })
        marker = page.IsTruncated === true ? page.NextPartNumberMarker : undefined
      } while (marker !== undefined)
      return parts
    }).pipe(Effect.catchTag("InvalidRequest", (e) => Effect.fail(new Unavailable({ message: e.message }))))

  return {
    kind: "s3",
    put: (key, body, contentType) =>
      unavailable(keyed(key).pipe(Effect.zipRight(send("write an object", (abortSignal) => client.send(new PutObjectCommand({ Bucket, Key: key, Body: body, ContentType: contentType }), { abortSignal }))), Effect.asVoid)),
    get: (key) =>
      Effect.gen(function* () {
        if (!isObjectKey(key)) return yield* new NotFound({ message: "No such object" })
        const answer = yield* send("read an object", (abortSignal) => client.send(new GetObjectCommand({ Bucket, Key: key }), { abortSignal })).pipe(
          Effect.catchTag("InvalidRequest", (e) => Effect.fail(new Unavailable({ message: e.message })))
        )
        const body = answer.Body as Readable | undefined
        if (body === undefined) return yield* new Unavailable({ message: "The object store answered without a body" })
        return { size: answer.ContentLength ?? 0, body: NodeStream.fromReadable(() => body, () => new Unavailable({ message: "The object store stopped mid-read" })) }
      }),
    getRange: (key, start, end) =>
      !isObjectKey(key) || end <= start
        ? Stream.empty
        : Stream.unwrap(
            send("read an object", (abortSignal) => client.send(new GetObjectCommand({ Bucket, Key: key, Range: `bytes=${start}-${end - 1}` }), { abortSignal })).pipe(
              Effect.catchTag("InvalidRequest", (e) => Effect.fail(new Unavailable({ message: e.message }))),
              Effect.map((answer) =>
                answer.Body === undefined ? Stream.empty : NodeStream.fromReadable(() => answer.Body as Readable, () => new Unavailable({ message: "The object store stopped mid-read" }))
              )
            )
          ),
    head: (key) =>
      isObjectKey(key)
        ? send("read an object", (abortSignal) => client.send(new HeadObjectCommand({ Bucket, Key: key }), { abortSignal })).pipe(
            Effect.map((o) => Option.some({ key, size: o.ContentLength ?? 0 })),
            Effect.catchTag("NotFound", () => Effect.succeed(Option.none<ObjectInfo>())),
            Effect.catchTag("InvalidRequest", (e) => Effect.fail(new Unavailable({ message: e.message })))
          )
        : Effect.succeed(Option.none()),
    list,
    removePrefix: (prefix) =>
      Effect.gen(function* () {
        const found = yield* list(prefix)
        for (let i = 0; i < found.length; i += 1000) {
          const batch = found.slice(i, i + 1000)
          yield* unavailable(send("delete objects", (abortSignal) => client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: batch.map((o) => ({ Key: o.key })), Quiet: true } }), { abortSignal })))
        }
        return found.length
      }),
    createUpload: (key) =>
      unavailable(
        keyed(key).pipe(
          Effect.zipRight(send("begin an upload", (abortSignal) => client.send(new CreateMultipartUploadCommand({ Bucket, Key: key, ContentType: "application/octet-stream" }), { abortSignal }))),
          Effect.flatMap((o) => (o.UploadId === undefined ? Effect.fail(new Unavailable({ message: "The object store began an upload without an id" })) : Effect.succeed(o.UploadId)))
        )
      ),
    presignPart: (key, uploadId, partNumber, size, seconds) =>
      Effect.tryPromise({
        // Signed with its Content-Length: the store takes exactly the part's size at this URL, no more.
        try: () =>
          getSignedUrl(client, new UploadPartCommand({ Bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, ContentLength: size }), {
            expiresIn: seconds,
            signableHeaders: new Set(["content-length"])
          }),
        catch: () => new Unavailable({ message: "The object store's part URL could not be signed" })
      }).pipe(Effect.map(Option.some)),
    putPart: (key, uploadId, partNumber, length, body) =>
      Effect.gen(function* () {
        if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PARTS) return yield* new InvalidRequest({ message: `part numbers run from 1 to ${MAX_PARTS}` })
        // Streamed to the store as it arrives (its length declared up front), never held whole; a body
        // longer or shorter than its length fails the stream, which ends the store's request.
        let sent = 0
        let refusal: InvalidRequest | null = null
        // The SDK does not end its request when the body fails: the refusal aborts it.
        const stop = new AbortController()
        const wrongLength = () => {
          refusal = new InvalidRequest({ message: `the part is not ${length} bytes, as its length said` })
          stop.abort()
          return refusal
        }
        const counted = Stream.concat(
          body.pipe(Stream.tap((chunk) => Effect.suspend(() => ((sent += chunk.length) > length ? Effect.fail(wrongLength()) : Effect.void)))),
          Stream.suspend(() => (sent === length ? Stream.empty : Stream.fail(wrongLength())))
        )
        const readable = yield* NodeStream.toReadable(counted)
        // A body that fails (its sender gone) ends the store's request; its error has a listener, never an unhandled one.
        let bodyFailed = false
        readable.on("error", () => {
          bodyFailed = true
          stop.abort()
        })
        const answer = yield* send("store a part", (abortSignal) => {
          abortSignal.addEventListener("abort", () => stop.abort())
          return client.send(new UploadPartCommand({ Bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: readable, ContentLength: length }), { abortSignal: stop.signal })
        }).pipe(
          Effect.catchAll((error) => Effect.fail(refusal ?? (bodyFailed ? new InvalidRequest({ message: "The part's body stopped before its end" }) : error)))
        )
        return { part_number: partNumber, etag: (answer.ETag ?? "").replace(/"/g, ""), size: length }
      }),
    listParts: partsOf,
    completeUpload: (key, uploadId, parts) =>
      send("complete an upload", (abortSignal) =>
        client.send(new CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.part_number, ETag: `"${p.etag.replace(/"/g, "")}"` })) } }), { abortSignal })
      ).pipe(
        Effect.zipRight(send("read an object", (abortSignal) => client.send(new HeadObjectCommand({ Bucket, Key: key }), { abortSignal }))),
        Effect.map((o) => ({ key, size: o.ContentLength ?? 0 }))
      ),
    abortUpload: (key, uploadId) =>
      send("abort an upload", (abortSignal) => client.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId: uploadId }), { abortSignal })).pipe(
        Effect.asVoid,
        Effect.catchTag("NotFound", () => Effect.void),
        Effect.catchTag("InvalidRequest", (e) => Effect.fail(new Unavailable({ message: e.message })))
      )
  }
}
