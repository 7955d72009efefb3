import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Chunk, Effect, Either, Option, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { filesystemObjects } from "../../../layers/objects/FilesystemObjects"
import { MIN_PART_BYTES, type ObjectBackend } from "../../../layers/objects/ObjectBackend"
import { s3Objects } from "../../../layers/objects/S3Objects"
import { type S3Fake, startS3Fake } from "../../fakes/S3Fake"

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
const failure = async <A, E>(effect: Effect.Effect<A, E>) => {
  const result = await Effect.runPromise(Effect.either(effect))
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left as E & { readonly _tag: string; readonly message: string }
}
const read = async (backend: ObjectBackend, key: string) => {
  const { size, body } = await run(backend.get(key))
  const bytes = Buffer.concat([...Chunk.toReadonlyArray(await run(Stream.runCollect(body)))])
  expect(bytes.length).toBe(size)
  return bytes
}
const streamOf = (bytes: Buffer, chunk = 256 * 1024) => Stream.fromIterable(Array.from({ length: Math.ceil(bytes.length / chunk) }, (_, i) => bytes.subarray(i * chunk, (i + 1) * chunk)))
const md5 = (bytes: Buffer) => createHash("md5").update(bytes).digest("hex")

let fake: S3Fake
let dir: string
beforeAll(async () => {
  fake = await startS3Fake()
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-objects-"))
})
afterAll(async () => {
  await fake.stop()
  fs.rmSync(dir, { recursive: true, force: true })
})

const backends: Array<[string, () => ObjectBackend]> = [
  ["the filesystem store", () => filesystemObjects(dir)],
  [
    "an S3 bucket (strict fake)",
    () => s3Objects({ bucket: fake.bucket, region: fake.region, endpoint: fake.endpoint, forcePathStyle: true, credentials: { accessKeyId: fake.accessKeyId, secretAccessKey: fake.secretAccessKey } })
  ]
]

describe.each(backends)("%s", (_name, make) => {
  const prefix = `evals/org_${randomBytes(4).toString("hex")}/`

  it("writes, reads, lists and deletes objects by prefix", async () => {
    const backend = make()
    await run(backend.put(`${prefix}run_1/run.json`, Buffer.from('{"ok":true}'), "application/json"))
    await run(backend.put(`${prefix}run_1/tasks/t1/transcript.json`, Buffer.from("[]"), "application/json"))
    await run(backend.put(`${prefix}run_2/run.json`, Buffer.from("{}"), "application/json"))
    // A task's later attempt: its key has a ~, signed and stored as any other.
    await run(backend.put(`${prefix}run_3/tasks/task_t1~2/transcript.json`, Buffer.from("[2]"), "application/json"))
    expect((await read(backend, `${prefix}run_3/tasks/task_t1~2/transcript.json`)).toString()).toBe("[2]")
    expect((await run(backend.list(`${prefix}run_3/`))).map((o) => o.key)).toEqual([`${prefix}run_3/tasks/task_t1~2/transcript.json`])
    expect(await run(backend.removePrefix(`${prefix}run_3/`))).toBe(1)
    expect((await read(backend, `${prefix}run_1/run.json`)).toString()).toBe('{"ok":true}')
    expect(await run(backend.head(`${prefix}run_1/run.json`))).toEqual(Option.some({ key: `${prefix}run_1/run.json`, size: 11 }))
    expect(await run(backend.head(`${prefix}run_1/nothing`))).toEqual(Option.none())
    expect((await run(backend.list(`${prefix}run_1/`))).map((o) => o.key)).toEqual([`${prefix}run_1/run.json`, `${prefix}run_1/tasks/t1/transcript.json`])
    expect((await run(backend.list(`${prefix}run_`))).length).toBe(3)
    expect(await run(backend.removePrefix(`${prefix}run_1/`))).toBe(2)
    expect((await run(backend.list(prefix))).map((o) => o.key)).toEqual([`${prefix}run_2/run.json`])
    expect((await failure(backend.get(`${prefix}run_1/run.json`)))._tag).toBe("NotFound")
  })

  it("refuses keys that are not the gateway's own shape", async () => {
    const backend = make()
    for (const key of ["../escape", "/abs", "a/../b", "a//b", "a/./b", "", "~/home", "a/b c"]) {
      expect((await failure(backend.put(key, Buffer.from("x"), "text/plain")))._tag).not.toBe("")
      expect((await failure(backend.get(key)))._tag).toBe("NotFound")
    }
    expect(fs.existsSync(path.join(dir, "escape"))).toBe(false)
  })

  it("assembles a multipart upload under S3's rules", async () => {
    const backend = make()
    const key = `${prefix}uploads/set.zip`
    const first = randomBytes(MIN_PART_BYTES)
    const last = randomBytes(1234)
    const uploadId = await run(backend.createUpload(key))
    const one = await run(backend.putPart(key, uploadId, 1, first.length, streamOf(first)))
    expect(one).toEqual({ part_number: 1, etag: md5(first), size: first.length })
    const two = await run(backend.putPart(key, uploadId, 2, last.length, streamOf(last)))
    // Resumable: the parts already stored are listed with their ETags.
    expect(await run(backend.listParts(key, uploadId))).toEqual([one, two])

    expect((await failure(backend.completeUpload(key, uploadId, [two, one])))._tag).toBe("InvalidRequest")
    expect((await failure(backend.completeUpload(key, uploadId, [one, { part_number: 2, etag: md5(first) }])))._tag).toBe("InvalidRequest")
    expect((await failure(backend.completeUpload(key, uploadId, [two, { part_number: 3, etag: two.etag }])))._tag).toBe("InvalidRequest")
    expect((await failure(backend.completeUpload(key, "x".repeat(32), [one, two])))._tag).toBe("NotFound")
    expect((await failure(backend.putPart(key, uploadId, 0, 1, streamOf(Buffer.from("x")))))._tag).toBe("InvalidRequest")
    expect((await failure(backend.putPart(key, uploadId, 3, 10, streamOf(Buffer.from("short")))))._tag).toBe("InvalidRequest")

    expect(await run(backend.completeUpload(key, uploadId, [one, two]))).toEqual({ key, size: first.length + last.length })
    expect((await read(backend, key)).equals(Buffer.concat([first, last]))).toBe(true)
    expect((await failure(backend.listParts(key, uploadId)))._tag).toBe("NotFound")
    await run(backend.abortUpload(key, uploadId))
  })

  it("refuses a part under 5 MiB that is not the last, and forgets an aborted upload", async () => {
    const backend = make()
    const key = `${prefix}uploads/small.zip`
    const uploadId = await run(backend.createUpload(key))
    const one = await run(backend.putPart(key, uploadId, 1, 10, streamOf(Buffer.alloc(10, 1))))
    const two = await run(backend.putPart(key, uploadId, 2, 10, streamOf(Buffer.alloc(10, 2))))
    expect((await failure(backend.completeUpload(key, uploadId, [one, two]))).message).toMatch(/at least|smaller than the minimum/)
    await run(backend.abortUpload(key, uploadId))
    expect((await failure(backend.putPart(key, uploadId, 3, 1, streamOf(Buffer.from("x")))))._tag).toBe("NotFound")
    expect((await failure(backend.listParts(`${prefix}uploads/other.zip`, await run(backend.createUpload(`${prefix}uploads/x.zip`)))))._tag).toBe("NotFound")
  })
})

describe("the filesystem store under attack (attack 36)", () => {
  it("leaves no part on disk when its upload is aborted while the part arrives", async () => {
    const backend = filesystemObjects(dir)
    const key = "uploads/org_race/x.zip"
    const uploadId = await run(backend.createUpload(key))
    const slow = Stream.fromIterable([Buffer.alloc(1000, 1), Buffer.alloc(1000, 2)]).pipe(Stream.tap(() => Effect.sleep("100 millis")))
    const sending = Effect.runPromise(Effect.either(backend.putPart(key, uploadId, 1, 2000, slow)))
    await new Promise((r) => setTimeout(r, 50))
    await run(backend.abortUpload(key, uploadId))
    expect((await sending)._tag).toBe("Left")
    expect(fs.readdirSync(path.join(dir, "tmp"))).toEqual([])
  })
})

describe("the S3 backend", () => {
  const settings = () => ({ bucket: fake.bucket, region: fake.region, endpoint: fake.endpoint, forcePathStyle: true, credentials: { accessKeyId: fake.accessKeyId, secretAccessKey: fake.secretAccessKey } })

  it("gives presigned part URLs the client PUTs to directly, which expire", async () => {
    const backend = s3Objects(settings())
    const key = "uploads/org_presign/set.zip"
    const uploadId = await run(backend.createUpload(key))
    const url = Option.getOrThrow(await run(backend.presignPart(key, uploadId, 1, 4096, 900)))
    const body = randomBytes(4096)
    const answer = await fetch(url, { method: "PUT", body })
    expect(answer.status).toBe(200)
    expect(fake.requests.at(-1)).toMatchObject({ method: "PUT", presigned: true, bytes: 4096 })
    expect(await run(backend.listParts(key, uploadId))).toEqual([{ part_number: 1, etag: md5(body), size: 4096 }])
    // Signed for part 1: the same URL cannot store another part number.
    const tampered = url.replace("partNumber=1", "partNumber=2")
    expect((await fetch(tampered, { method: "PUT", body })).status).toBe(403)
    fake.advance(901_000)
    expect((await fetch(url, { method: "PUT", body })).status).toBe(403)
  })

  it("reports a store that refuses its credentials as unavailable, without the secret", async () => {
    const backend = s3Objects({ ...settings(), credentials: { accessKeyId: fake.accessKeyId, secretAccessKey: "wrong-secret-value" } })
    const error = await failure(backend.put("evals/x/run.json", Buffer.from("{}"), "application/json"))
    expect(error._tag).toBe("Unavailable")
    expect(error.message).toMatch(/SignatureDoesNotMatch/)
    expect(error.message).not.toMatch(/wrong-secret-value/)
  })
})
