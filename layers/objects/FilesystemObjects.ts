import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { NodeSink, NodeStream } from "@effect/platform-node"
import { Effect, Option, Stream } from "effect"
import { InvalidRequest, NotFound, Unavailable } from "../../src/domain/Errors"
import { isObjectKey, MAX_PARTS, MIN_PART_BYTES, type ObjectBackend, type ObjectInfo, type StoredPart } from "./ObjectBackend"

const UPLOAD_ID = /^[A-Za-z0-9_-]{32}$/
const NO_UPLOAD = "No such upload: it was completed, aborted or never begun"

/**
 * The embedded object store: a folder (SP_DATA_DIR/objects unless set). Objects are files under
 * `objects/`, written to `tmp/` and renamed into place, so a reader never sees half a file; an
 * upload is a folder of parts under `uploads/`, each part's MD5 (its ETag, as S3 gives it) beside it.
 */
export const filesystemObjects = (root: string): ObjectBackend => {
  const objectsDir = path.join(root, "objects")
  const uploadsDir = path.join(root, "uploads")
  const tmpDir = path.join(root, "tmp")
  const io = <A>(what: string, run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: (error) => error }).pipe(
      Effect.tapError((error) => Effect.logWarning(`object store: ${what} failed`, error instanceof Error ? error.message : String(error))),
      Effect.mapError(() => new Unavailable({ message: `The object store could not ${what}` }))
    )
  const fileOf = (key: string) => {
    if (!isObjectKey(key)) throw new Error(`not an object key: ${JSON.stringify(key).slice(0, 80)}`)
    return path.join(objectsDir, key)
  }
  const checkedKey = (key: string): Effect.Effect<string, InvalidRequest> => (isObjectKey(key) ? Effect.succeed(key) : Effect.fail(new InvalidRequest({ message: "not an object key" })))
  const tmpFile = async () => {
    await fsp.mkdir(tmpDir, { recursive: true, mode: 0o700 })
    return path.join(tmpDir, randomBytes(12).toString("hex"))
  }
  const placeFile = async (from: string, key: string) => {
    const target = fileOf(key)
    await fsp.mkdir(path.dirname(target), { recursive: true, mode: 0o700 })
    await fsp.rename(from, target)
  }
  const uploadDir = (uploadId: string) => path.join(uploadsDir, uploadId)
  const openUpload = (key: string, uploadId: string) =>
    Effect.gen(function* () {
      if (!UPLOAD_ID.test(uploadId)) return yield* new NotFound({ message: NO_UPLOAD })
      const meta = yield* io("read an upload", () => fsp.readFile(path.join(uploadDir(uploadId), "upload.json"), "utf8").catch((e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? null : Promise.reject(e))))
      if (meta === null || (JSON.parse(meta) as { key: string }).key !== key) return yield* new NotFound({ message: NO_UPLOAD })
      return uploadDir(uploadId)
    })
  const partsOf = (dir: string) =>
    io("list an upload's parts", async () => {
      const names = (await fsp.readdir(dir)).filter((n) => /^\d+\.json$/.test(n))
      const parts = await Promise.all(names.map(async (n) => JSON.parse(await fsp.readFile(path.join(dir, n), "utf8")) as StoredPart))
      return parts.sort((a, b) => a.part_number - b.part_number)
    })

  const walk = async (dir: string, prefix: string, into: Array<ObjectInfo>) => {
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? [] : Promise.reject(e)))
    for (const entry of entries) {
      const full = path.join(dir, entry.name)
      const key = path.relative(objectsDir, full).split(path.sep).join("/")
      if (entry.isDirectory()) {
        if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) await walk(full, prefix, into)
      } else if (entry.isFile() && key.startsWith(prefix)) {
        into.push({ key, size: (await fsp.stat(full)).size })
      }
    }
    return into
  }
  const list = (prefix: string) =>
    io("list objects", async () => {
      const start = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : ""
      if (start !== "" && !isObjectKey(start)) return []
      return (await walk(path.join(objectsDir, start), prefix, [])).sort((a, b) => (a.key < b.key ? -1 : 1))
    })

  return {
    kind: "filesystem",
    put: (key, body) =>
      checkedKey(key).pipe(
        Effect.mapError(() => new Unavailable({ message: "The object store could not write an object" })),
        Effect.zipRight(
          io("write an object", async () => {
            const tmp = await tmpFile()
            try {
              await fsp.writeFile(tmp, body, { mode: 0o600 })
              await placeFile(tmp, key)
            } catch (error) {
              await fsp.rm(tmp, { force: true })
              throw error
            }
          })
        )
      ),
    get: (key) =>
      Effect.gen(function* () {
        yield* checkedKey(key).pipe(Effect.mapError(() => new NotFound({ message: "No such object" })))
        const file = fileOf(key)
        const stat = yield* io("read an object", () => fsp.stat(file).catch((e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? null : Promise.reject(e))))
        if (stat === null || !stat.isFile()) return yield* new NotFound({ message: "No such object" })
        // Opened now, so an object deleted while it is read still streams whole.
        const handle = yield* io("read an object", () => fsp.open(file, "r"))
        const body = NodeStream.fromReadable(() => handle.createReadStream(), () => new Unavailable({ message: "The object store stopped mid-read" }))
        return { size: stat.size, body }
      }),
    getRange: (key, start, end) =>
      isObjectKey(key) && end > start
        ? NodeStream.fromReadable(
            () => fs.createReadStream(fileOf(key), { start, end: end - 1 }),
            (error) => ((error as NodeJS.ErrnoException).code === "ENOENT" ? new NotFound({ message: "No such object" }) : new Unavailable({ message: "The object store stopped mid-read" }))
          )
        : Stream.empty,
    head: (key) =>
      isObjectKey(key)
        ? io("read an object", () => fsp.stat(fileOf(key)).then((s) => (s.isFile() ? Option.some({ key, size: s.size }) : Option.none()), (e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? Option.none() : Promise.reject(e))))
        : Effect.succeed(Option.none()),
    list,
    removePrefix: (prefix) =>
      Effect.gen(function* () {
        const found = yield* list(prefix)
        yield* io("delete objects", () => Promise.all(found.map((o) => fsp.rm(fileOf(o.key), { force: true }))))
        return found.length
      }),
    createUpload: (key) =>
      Effect.gen(function* () {
        yield* checkedKey(key).pipe(Effect.orDie)
        const uploadId = randomBytes(24).toString("base64url")
        yield* io("begin an upload", async () => {
          await fsp.mkdir(uploadDir(uploadId), { recursive: true, mode: 0o700 })
          await fsp.writeFile(path.join(uploadDir(uploadId), "upload.json"), JSON.stringify({ key, created: new Date().toISOString() }))
        })
        return uploadId
      }),
    presignPart: () => Effect.succeed(Option.none()),
    putPart: (key, uploadId, partNumber, length, body) =>
      Effect.gen(function* () {
        const dir = yield* openUpload(key, uploadId)
        if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PARTS) {
          return yield* new InvalidRequest({ message: `part numbers run from 1 to ${MAX_PARTS}` })
        }
        const tmp = yield* io("write a part", tmpFile)
        const md5 = createHash("md5")
        let size = 0
        const counted = body.pipe(
          Stream.tap((chunk) =>
            Effect.suspend(() => {
              size += chunk.length
              md5.update(chunk)
              return size > length ? Effect.fail(new InvalidRequest({ message: `the part is longer than its length (${length} bytes)` })) : Effect.void
            })
          )
        )
        const toFile = NodeSink.fromWritable(() => fs.createWriteStream(tmp, { mode: 0o600 }), () => new Unavailable({ message: "The object store could not write a part" }))
        yield* Stream.run(counted, toFile).pipe(Effect.onError(() => Effect.promise(() => fsp.rm(tmp, { force: true }))))
        if (size !== length) {
          yield* io("remove a part", () => fsp.rm(tmp, { force: true }))
          return yield* new InvalidRequest({ message: `the part ended after ${size} of its ${length} bytes` })
        }
        const part: StoredPart = { part_number: partNumber, etag: md5.digest("hex"), size }
        // The upload may have been aborted (its folder deleted) while the part arrived: the part goes too.
        const kept = yield* io("write a part", async () => {
          try {
            await fsp.rename(tmp, path.join(dir, `${partNumber}.part`))
            await fsp.writeFile(path.join(dir, `${partNumber}.json`), JSON.stringify(part))
            return true
          } catch (error) {
            await fsp.rm(tmp, { force: true })
            if ((error as NodeJS.ErrnoException).code === "ENOENT") return false
            throw error
          }
        })
        if (!kept) return yield* new NotFound({ message: NO_UPLOAD })
        return part
      }),
    listParts: (key, uploadId) => openUpload(key, uploadId).pipe(Effect.flatMap(partsOf)),
    completeUpload: (key, uploadId, chosen) =>
      Effect.gen(function* () {
        const dir = yield* openUpload(key, uploadId)
        if (chosen.length === 0) return yield* new InvalidRequest({ message: "an upload completes with at least one part" })
        for (let i = 1; i < chosen.length; i++) {
          if (chosen[i]!.part_number <= chosen[i - 1]!.part_number) return yield* new InvalidRequest({ message: "parts must be listed in ascending order of part number" })
        }
        const stored = new Map((yield* partsOf(dir)).map((p) => [p.part_number, p]))
        for (const [i, { part_number, etag }] of chosen.entries()) {
          const part = stored.get(part_number)
          if (part === undefined || part.etag !== etag.replace(/"/g, "")) return yield* new InvalidRequest({ message: `part ${part_number} was not uploaded, or its ETag differs` })
          if (i < chosen.length - 1 && part.size < MIN_PART_BYTES) return yield* new InvalidRequest({ message: `part ${part_number} is ${part.size} bytes: every part but the last is at least ${MIN_PART_BYTES} bytes` })
        }
        const size = yield* io("assemble an upload", async () => {
          const tmp = await tmpFile()
          const out = fs.createWriteStream(tmp, { mode: 0o600 })
          try {
            for (const { part_number } of chosen) {
              await new Promise<void>((resolve, reject) => {
                const input = fs.createReadStream(path.join(dir, `${part_number}.part`))
                input.on("error", reject).on("end", resolve).pipe(out, { end: false })
              })
            }
            await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())))
            await placeFile(tmp, key)
            await fsp.rm(dir, { recursive: true, force: true })
          } catch (error) {
            out.destroy()
            await fsp.rm(tmp, { force: true })
            throw error
          }
          return (await fsp.stat(fileOf(key))).size
        })
        return { key, size }
      }),
    abortUpload: (key, uploadId) =>
      openUpload(key, uploadId).pipe(
        Effect.flatMap((dir) => io("abort an upload", () => fsp.rm(dir, { recursive: true, force: true }))),
        Effect.catchTag("NotFound", () => Effect.void)
      )
  }
}
