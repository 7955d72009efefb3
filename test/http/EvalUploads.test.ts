import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { Effect, TestClock, TestContext } from "effect"
import * as yazl from "yazl"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LOCAL_ORG, UserId } from "../../src/domain/Ids"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { ApiKeys } from "../../src/services/ApiKeys"
import { EvalUploads } from "../../src/services/EvalUploads"
import { type S3Fake, startS3Fake } from "../fakes/S3Fake"
import { request } from "../support/Http"
import { tempDataDir } from "../support/Gateway"
import { localOperator, startInProcess } from "../support/InProcess"

const EXAMPLE = path.resolve(import.meta.dirname, "../../docs/eval-set-example")
const PART = 64 * 1024 * 1024

/** The example set zipped inside a folder of its own, with `extra` bytes of padding stored as they are. */
const zipOf = (extra: number, add: (zip: yazl.ZipFile) => void = () => {}) =>
  new Promise<Buffer>((resolve) => {
    const zip = new yazl.ZipFile()
    for (const file of fs.readdirSync(EXAMPLE, { recursive: true, encoding: "utf8" })) {
      const full = path.join(EXAMPLE, file)
      if (fs.statSync(full).isFile()) zip.addFile(full, `jaffle/${file}`)
    }
    if (extra > 0) zip.addBuffer(randomBytes(extra), "jaffle/data/padding.bin", { compress: false })
    add(zip)
    zip.end()
    const chunks: Array<Buffer> = []
    zip.outputStream.on("data", (c: Buffer) => chunks.push(c)).on("end", () => resolve(Buffer.concat(chunks)))
  })

type Gateway = Awaited<ReturnType<typeof startInProcess>>
const putPart = (gateway: Gateway, key: string, url: string, body: Buffer, contentType = "application/octet-stream") =>
  request(gateway.url, url, { key, method: "PUT", rawBody: body, headers: { "content-type": contentType } })

const memberKey = (gateway: Gateway) =>
  gateway.runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* OrgsRepo).ensureMember({ orgId: LOCAL_ORG, orgName: "local", userId: UserId.make("user_other_uploader"), role: "admin" })
      return (yield* (yield* ApiKeys).create({ ...localOperator, userId: UserId.make("user_other_uploader") }, { name: "other", scopes: ["read", "write"] })).key
    }).pipe(Effect.provide(OrgsRepo.Default))
  )

describe("eval-set uploads into the filesystem store, through the gateway (issue 31)", () => {
  let gateway: Gateway
  let writer: string
  let admin: string

  beforeAll(async () => {
    gateway = await startInProcess({ SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000" })
    writer = await gateway.keyWith(["read", "write"])
    admin = await gateway.keyWith(["read", "write", "admin"])
  }, 60_000)
  afterAll(() => gateway?.stop())

  it("takes parts streamed to disk, picks an interrupted upload up again, completes it, and reads the set from the archive", async () => {
    const archive = await zipOf(PART)
    const begun = await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { file_name: "jaffle set.zip", size: archive.length } })
    expect(begun.status, begun.text).toBe(200)
    const id = begun.json.upload_id as string
    expect(begun.json).toMatchObject({ status: "open", part_size: PART, part_count: 2, stored_parts: [] })
    expect(begun.json.parts).toEqual([
      { part_number: 1, size: PART, method: "PUT", url: `/api/evals/upload/${id}/parts/1`, auth: "api_key" },
      { part_number: 2, size: archive.length - PART, method: "PUT", url: `/api/evals/upload/${id}/parts/2`, auth: "api_key" }
    ])
    const first = await putPart(gateway, writer, begun.json.parts[0].url, archive.subarray(0, PART))
    expect(first.status, first.text).toBe(200)

    // The second part's sender goes away halfway: nothing of it is kept.
    await new Promise<void>((resolve) => {
      const target = new URL(`${gateway.url}${begun.json.parts[1].url}`)
      const sending = http.request(target, { method: "PUT", headers: { "x-api-key": writer, "content-type": "application/octet-stream", "content-length": String(archive.length - PART) } })
      sending.on("error", () => resolve())
      sending.write(archive.subarray(PART, PART + 100), () => setTimeout(() => (sending.destroy(), resolve()), 200))
    })
    const resumed = await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { upload_id: id } })
    expect(resumed.json.stored_parts).toEqual([{ part_number: 1, size: PART, etag: first.json.etag }])
    expect(resumed.json.parts.map((p: { part_number: number }) => p.part_number)).toEqual([2])
    expect((await request(gateway.url, "/api/evals/upload/complete", { key: writer, body: { upload_id: id } })).json.message).toMatch(/Parts 2 are not stored yet/)

    expect((await putPart(gateway, writer, resumed.json.parts[0].url, archive.subarray(PART))).status).toBe(200)
    const done = await request(gateway.url, "/api/evals/upload/complete", { key: writer, body: { upload_id: id } })
    expect(done.status, done.text).toBe(200)
    expect(done.json).toMatchObject({ status: "complete", parts: [] })

    const saved = await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { eval_set: { kind: "upload", upload_id: id } } })
    expect(saved.status, saved.text).toBe(200)
    const tasks = await request(gateway.url, "/api/evals/tasks", { key: admin })
    expect(tasks.status, tasks.text).toBe(200)
    expect(tasks.json.ref).toBe(`jaffle_orders@${id}`)
    expect(tasks.json.manifest.tasks).toHaveLength(3)
  }, 60_000)

  it("refuses bad parts, others' uploads, a fourth open upload, and aborted ones", async () => {
    const small = await zipOf(0)
    const begin = () => request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { file_name: "s.zip", size: small.length } })
    const one = await begin()
    const id = one.json.upload_id as string
    const url = one.json.parts[0].url as string
    expect((await putPart(gateway, writer, url, small.subarray(1))).json.message).toMatch(/is \d+ bytes \(Content-Length said/)
    expect((await putPart(gateway, writer, url, small, "application/json")).status).toBe(415)
    expect((await putPart(gateway, writer, url.replace(/\/1$/, "/2"), small)).json.message).toMatch(/has parts 1 to 1/)
    expect((await putPart(gateway, await gateway.keyWith(["read"]), url, small)).status).toBe(403)
    expect((await request(gateway.url, url, { method: "PUT", rawBody: small, headers: { "content-type": "application/octet-stream" } })).status).toBe(401)
    const other = await memberKey(gateway)
    expect((await putPart(gateway, other, url, small)).status).toBe(404)
    expect((await request(gateway.url, "/api/evals/upload/complete", { key: other, body: { upload_id: id } })).status).toBe(404)
    expect((await request(gateway.url, "/api/evals/upload/initiate", { key: other, body: { upload_id: id } })).status).toBe(404)

    const second = await begin()
    const third = await begin()
    const fourth = await begin()
    expect(fourth.status).toBe(409)
    expect(fourth.json.message).toMatch(/3 uploads open/)
    expect((await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { file_name: "big.zip", size: 9 * 1024 ** 3 } })).json.message).toMatch(/at most/)
    expect((await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { file_name: "../x.zip", size: 10 } })).status).toBe(400)

    const aborted = await request(gateway.url, "/api/evals/upload/abort", { key: writer, body: { upload_id: id } })
    expect(aborted.json.status).toBe("aborted")
    expect((await putPart(gateway, writer, url, small)).status).toBe(404)
    const again = await begin()
    expect(again.status).toBe(200)
    expect((await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { eval_set: { kind: "upload", upload_id: id } } })).json.message).toMatch(/no completed upload/)
    for (const open of [second, third, again]) expect((await request(gateway.url, "/api/evals/upload/abort", { key: writer, body: { upload_id: open.json.upload_id } })).status).toBe(200)
    // Completed archives are limited too (attack 36 F6): ten kept at once, and abort deletes one sooner.
    const kept: Array<string> = []
    let refused = await begin()
    for (; refused.status === 200 && kept.length <= 10; refused = await begin()) {
      expect((await putPart(gateway, writer, refused.json.parts[0].url, small)).status).toBe(200)
      expect((await request(gateway.url, "/api/evals/upload/complete", { key: writer, body: { upload_id: refused.json.upload_id } })).status).toBe(200)
      kept.push(refused.json.upload_id)
    }
    expect(refused.status).toBe(409)
    expect(refused.json.message).toMatch(/keep 10 completed archives/)
    for (const id of kept) expect((await request(gateway.url, "/api/evals/upload/abort", { key: writer, body: { upload_id: id } })).json.status).toBe("aborted")
    const after = await begin()
    expect(after.status).toBe(200)
    await request(gateway.url, "/api/evals/upload/abort", { key: writer, body: { upload_id: after.json.upload_id } })
  })

  it("refuses a set whose archive holds a link, or that is no archive", async () => {
    const upload = async (bytes: Buffer) => {
      const begun = await request(gateway.url, "/api/evals/upload/initiate", { key: admin, body: { file_name: "x.zip", size: bytes.length } })
      expect((await putPart(gateway, admin, begun.json.parts[0].url, bytes)).status).toBe(200)
      expect((await request(gateway.url, "/api/evals/upload/complete", { key: admin, body: { upload_id: begun.json.upload_id } })).status).toBe(200)
      await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { eval_set: { kind: "upload", upload_id: begun.json.upload_id } } })
      return request(gateway.url, "/api/evals/tasks", { key: admin })
    }
    const linked = await zipOf(0, (zip) => zip.addBuffer(Buffer.from("/etc/passwd"), "jaffle/gold/passwd.csv", { mode: 0o120777 }))
    expect((await upload(linked)).json.message).toMatch(/symbolic links.*gold\/passwd\.csv/)
    expect((await upload(randomBytes(5000))).json.message).toMatch(/not a zip archive \(/)
    const twice = await zipOf(0, (zip) => zip.addBuffer(Buffer.from("name: other\n"), "jaffle/eval.yaml"))
    expect((await upload(twice)).json.message).toMatch(/two entries named eval\.yaml/)
    // Python's zipfile.writestr gives a file permission bits but no file type: a file all the same.
    const python = await zipOf(0, (zip) => zip.addBuffer(Buffer.from("x\n1\n"), "jaffle/gold/extra.csv", { mode: 0o600 }))
    expect((await upload(python)).status).toBe(200)
  })
})

describe("eval-set uploads into an S3 bucket, parts sent straight to it (issue 31)", () => {
  let fake: S3Fake
  let gateway: Gateway
  let writer: string

  beforeAll(async () => {
    fake = await startS3Fake()
    gateway = await startInProcess({
      SP_S3_BUCKET: fake.bucket,
      SP_S3_ENDPOINT: fake.endpoint,
      SP_S3_REGION: fake.region,
      SP_S3_ACCESS_KEY_ID: fake.accessKeyId,
      SP_S3_SECRET_ACCESS_KEY: fake.secretAccessKey
    })
    writer = await gateway.keyWith(["read", "write", "admin"])
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await fake?.stop()
  })

  it("survives a part sent through its own route that stops halfway (attack 36 F1)", async () => {
    const begun = await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { file_name: "x.zip", size: 1000 } })
    await new Promise<void>((resolve) => {
      const sending = http.request(`${gateway.url}/api/evals/upload/${begun.json.upload_id}/parts/1`, {
        method: "PUT",
        headers: { "x-api-key": writer, "content-type": "application/octet-stream", "content-length": "1000" }
      })
      sending.on("error", () => resolve())
      sending.write(Buffer.alloc(500, 0x41), () => setTimeout(() => (sending.destroy(), resolve()), 500))
    })
    await new Promise((r) => setTimeout(r, 1500))
    expect((await request(gateway.url, "/health")).status).toBe(200)
    expect((await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { upload_id: begun.json.upload_id } })).json.stored_parts).toEqual([])
    await request(gateway.url, "/api/evals/upload/abort", { key: writer, body: { upload_id: begun.json.upload_id } })
  })

  it("hands out presigned part URLs, completes in the bucket, and reads the set in place by ranges", async () => {
    const archive = await zipOf(PART)
    const begun = await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { file_name: "set.zip", size: archive.length } })
    expect(begun.status, begun.text).toBe(200)
    expect(begun.json.parts.map((p: { auth: string }) => p.auth)).toEqual(["presigned", "presigned"])
    // A part's URL is signed for its size: more bytes than the part holds are refused by the store (attack 36 F6).
    expect((await fetch(begun.json.parts[1].url, { method: "PUT", body: Buffer.alloc(begun.json.parts[1].size + 1000) })).status).toBe(403)
    const before = fake.requests.length
    for (const part of begun.json.parts as Array<{ url: string; part_number: number; size: number }>) {
      const start = (part.part_number - 1) * PART
      const sent = await fetch(part.url, { method: "PUT", body: archive.subarray(start, start + part.size) })
      expect(sent.status).toBe(200)
    }
    // The bytes went to the bucket, not through the gateway.
    expect(fake.requests.slice(before).filter((r) => r.presigned).map((r) => r.bytes)).toEqual([PART, archive.length - PART])
    const done = await request(gateway.url, "/api/evals/upload/complete", { key: writer, body: { upload_id: begun.json.upload_id } })
    expect(done.status, done.text).toBe(200)
    expect(fake.objects.get(`uploads/local/${begun.json.upload_id}.zip`)?.body.length).toBe(archive.length)

    await request(gateway.url, "/api/evals/config", { key: writer, method: "PUT", body: { eval_set: { kind: "upload", upload_id: begun.json.upload_id } } })
    const reads = fake.requests.length
    const tasks = await request(gateway.url, "/api/evals/tasks", { key: writer })
    expect(tasks.status, tasks.text).toBe(200)
    expect(tasks.json.manifest.name).toBe("jaffle_orders")
    const fetched = fake.requests.slice(reads).filter((r) => r.method === "GET")
    expect(fetched.length).toBeGreaterThan(0)
  }, 60_000)
})

describe("eval-set upload expiry (issue 31)", () => {
  it("aborts uploads open past 6 hours and deletes archives 7 days after completion", async () => {
    const dataDir = tempDataDir()
    const gateway = await startInProcess({ SP_DATA_DIR: dataDir })
    // The expiry loop's sweep, run as it would be once the clock has moved on.
    const sweepLater = (ms: number) =>
      gateway.runtime.runPromise(
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.now() + ms)
          return yield* (yield* EvalUploads).expire
        }).pipe(Effect.provide(TestContext.TestContext))
      )
    try {
      const writer = await gateway.keyWith(["read", "write"])
      const small = await zipOf(0)
      const open = await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { file_name: "a.zip", size: small.length } })
      expect((await putPart(gateway, writer, open.json.parts[0].url, small)).status).toBe(200)
      const kept = await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { file_name: "b.zip", size: small.length } })
      expect((await putPart(gateway, writer, kept.json.parts[0].url, small)).status).toBe(200)
      expect((await request(gateway.url, "/api/evals/upload/complete", { key: writer, body: { upload_id: kept.json.upload_id } })).status).toBe(200)
      const archive = path.join(dataDir, `objects/objects/uploads/local/${kept.json.upload_id}.zip`)
      expect(await sweepLater(5 * 3_600_000)).toBe(0)
      expect(await sweepLater(7 * 3_600_000)).toBe(1)
      expect((await request(gateway.url, "/api/evals/upload/initiate", { key: writer, body: { upload_id: open.json.upload_id } })).status).toBe(404)
      expect(fs.readdirSync(path.join(dataDir, "objects/uploads"))).toEqual([])
      expect(fs.existsSync(archive)).toBe(true)
      expect(await sweepLater(8 * 24 * 3_600_000)).toBe(1)
      expect(fs.existsSync(archive)).toBe(false)
    } finally {
      await gateway.stop()
    }
  }, 60_000)
})
