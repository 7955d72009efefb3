import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import WebSocket from "ws"
import { LOCAL_ORG, UserId } from "../../src/domain/Ids"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { ApiKeys } from "../../src/services/ApiKeys"
import { eventually } from "../support/Eventually"
import { type Gateway, localKey } from "../support/Gateway"
import { request } from "../support/Http"
import { notebookHost, notebookOrigin, notebookRequest, runOnKernel } from "../support/Notebooks"
import { localOperator, startApp, startInProcess } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const inCi = process.env["CI"] === "true"
const notebooksHere = fs.existsSync("/usr/bin/bwrap") && fs.existsSync("/etc/jupyter/jupyter_server_config.d/nbclassic.json")
if (!notebooksHere && inCi) throw new Error("notebook sessions need bubblewrap and Debian's Jupyter packages: .ci/run installs them")
const skip = !(await postgresAvailable()) || !notebooksHere
const STRANGER = UserId.make("someone-else")

describe("notebook sessions over REST and the proxy's HTTP (issue 29)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let owner: string
  let reader: string
  let stranger: string

  beforeAll(async () => {
    if (skip) return
    gateway = await startInProcess({ SP_NOTEBOOK_IDLE_TIMEOUT: "4", SP_PER_KEY_RPM: "100000", SP_RATE_LIMIT_GENERAL_RPM: "100000" }, { notebooks: true })
    owner = await gateway.keyWith(["read", "query", "write", "execute"])
    reader = await gateway.keyWith(["read", "query"])
    stranger = await gateway.runtime.runPromise(
      Effect.gen(function* () {
        yield* (yield* OrgsRepo).ensureMember({ orgId: LOCAL_ORG, orgName: "local", userId: STRANGER, role: "member" })
        return (yield* (yield* ApiKeys).create({ ...localOperator, userId: STRANGER, role: "member" }, { name: "stranger", scopes: ["read", "query", "write", "execute"] })).key
      }).pipe(Effect.provide(OrgsRepo.Default))
    )
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
  })

  const api = (route: string, options: Parameters<typeof request>[2] = {}) =>
    route.startsWith("/notebook/") ? notebookRequest(gateway.notebookUrl!, route, { key: owner, ...options }) : request(gateway.url, route, { key: owner, ...options })

  it.skipIf(skip)("one session per credential, its Jupyter server reached only by it through the proxy, ended on request and when idle", async () => {
    const started = await api("/api/notebook-sessions", { body: {} })
    expect(started.status, started.text).toBe(201)
    const id = started.json.id
    expect(started.json).toMatchObject({ status: "running", url: `${notebookOrigin(gateway.notebookUrl!, id)}/notebook/${id}/tree`, reused: false, idle_timeout_seconds: 4 })
    expect((await api("/api/notebook-sessions", { body: {} })).json).toMatchObject({ id, reused: true })

    const status = await api(`/notebook/${id}/api/status`)
    expect(status.status, status.text).toBe(200)
    expect(status.json).toMatchObject({ kernels: 0 })
    const tree = await api(`/notebook/${id}/tree`)
    expect(tree.status).toBe(200)
    expect(tree.headers["content-type"]).toMatch(/text\/html/)
    expect(tree.text).toContain("/notebook/" + id + "/static/")
    // Its contents API writes in the user's work directory.
    const saved = await api(`/notebook/${id}/api/contents/hello.txt`, { method: "PUT", body: { type: "file", format: "text", content: "hi" } })
    expect(saved.status, saved.text).toBe(201)

    for (const [key, route, expected] of [
      [stranger, `/notebook/${id}/api/status`, [404, "not_found"]],
      [stranger, `/api/notebook-sessions/${id}`, [404, "not_found"]],
      [reader, `/notebook/${id}/api/status`, [403, "insufficient_scope"]],
      ["sp_" + "0".repeat(32), `/notebook/${id}/api/status`, [401, "invalid_api_key"]],
      [null, `/notebook/${id}/api/status`, [401, "unauthenticated"]]
    ] as const) {
      const refused = route.startsWith("/notebook/") ? await notebookRequest(gateway.notebookUrl!, route, { key }) : await request(gateway.url, route, { key })
      expect([route, refused.status, refused.json?.code]).toEqual([route, ...expected])
    }

    // Kept alive by use; ended once unused past the idle timeout, and says why.
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1500))
      expect((await api(`/api/notebook-sessions/${id}/ping`, { method: "POST" })).json.status).toBe("running")
    }
    const ended = await eventually(() => api(`/api/notebook-sessions/${id}`), (res) => res.json.status === "stopped", "the idle session's end", 15_000)
    expect(ended.json.error).toMatch(/ended after 4 s without use/)
    const after = await api(`/notebook/${id}/api/status`)
    expect([after.status, after.json.code]).toEqual([409, "conflict"])
    expect(after.json.message).toMatch(/without use/)

    // A new session finds the files the last one left.
    const next = (await api("/api/notebook-sessions", { body: {} })).json
    expect(next.id).not.toBe(id)
    expect((await api(`/notebook/${next.id}/api/contents/hello.txt`)).json).toMatchObject({ content: "hi" })
    expect((await api(`/api/notebook-sessions/${next.id}`, { method: "DELETE" })).json).toEqual({ id: next.id, deleted: true })
    expect((await api(`/notebook/${next.id}/api/status`)).status).toBe(409)
  }, 90_000)
})

describe("notebook sessions: a Jupyter client's kernel exchange over the proxy's WebSocket (issue 29)", () => {
  let gateway: Gateway
  let database: TestDatabase
  let key: string

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table people (id int, email text); insert into people values (1, 'ada.lovelace@example.org')")
    gateway = await startApp({ notebooks: true })
    key = await localKey(gateway)
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key, body: connection })).status).toBe(201)
    await request(gateway.url, "/api/connections/pg/pii", { key, method: "PUT", body: { rules: [{ table: "people", column: "email", action: "redact" }] } })
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  it.skipIf(skip)("a kernel runs code that queries through sluice (masked, audited); refusals at the upgrade; a stopped session tells its open sockets", async () => {
    const session = (await request(gateway.url, "/api/notebook-sessions", { key, body: { connection_name: "pg" } })).json
    const kernel = await notebookRequest(gateway.notebookUrl!, `/notebook/${session.id}/api/kernels`, { key, body: { name: "python3" } })
    expect(kernel.status, kernel.text).toBe(201)
    const channels = `${gateway.notebookUrl!.replace("http", "ws")}/notebook/${session.id}/api/kernels/${kernel.json.id}/channels?session_id=${randomUUID()}`

    const ran = await runOnKernel(channels, { "x-api-key": key }, "import sluice\nprint(sluice.query('select id, email from people').rows)")
    expect(ran).toEqual({ stdout: "[[1, '[REDACTED]']]\n", status: "ok" })
    const audit = (await request(gateway.url, "/api/audit?limit=50", { key })).json.items
    const query = audit.find((row: any) => row.event_type === "query" && row.sql === "select id, email from people")
    expect(query.details.parent).toMatchObject({ event_type: "notebook_query", notebook_id: session.id })
    expect(audit.some((row: any) => row.event_type === "notebook_websocket" && row.outcome === "success" && !String(row.route).includes("?"))).toBe(true)
    expect(JSON.stringify(audit)).not.toContain("lovelace")

    await expect(runOnKernel(channels, { "x-api-key": "sp_" + "0".repeat(32) }, "1")).rejects.toThrow("refused: 401")
    await expect(runOnKernel(channels, { "x-api-key": key, origin: "http://evil.example" }, "1")).rejects.toThrow("refused: 403")

    // An open socket is told why when its session ends.
    const socket = new WebSocket(channels, { headers: { host: notebookHost(gateway.notebookUrl!, session.id), "x-api-key": key } })
    await new Promise((resolve) => socket.on("open", resolve))
    const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on("close", (code, reason) => resolve({ code, reason: reason.toString() })))
    expect((await request(gateway.url, `/api/notebook-sessions/${session.id}`, { key, method: "DELETE" })).status).toBe(200)
    expect(await closed).toEqual({ code: 4000, reason: "The notebook session was stopped" })
  }, 90_000)

  it.skipIf(skip)("the notebook origin grants no local access: a keyless request from this machine is refused, even to a session local access started", async () => {
    const started = await request(gateway.url, "/api/notebook-sessions", { body: {} })
    expect(started.status, started.text).toBe(201)
    const id = started.json.id as string
    const status = await notebookRequest(gateway.notebookUrl!, `/notebook/${id}/api/status`)
    expect([status.status, status.json.code]).toEqual([401, "unauthenticated"])
    const kernel = await notebookRequest(gateway.notebookUrl!, `/notebook/${id}/api/kernels`, { body: { name: "python3" }, headers: { origin: notebookOrigin(gateway.notebookUrl!, id) } })
    expect(kernel.status).toBe(401)
    expect((await request(gateway.url, `/api/notebook-sessions/${id}`, { method: "DELETE" })).status).toBe(200)
  }, 60_000)
})

describe("notebook sessions with a notebook folder out of a session's reach (issue 29)", () => {
  it.skipIf(skip || process.getuid?.() !== 0)("answer 503 saying the setting is wrong, without naming the folder", async () => {
    const closed = fs.mkdtempSync("/tmp/sluice-closed-")
    fs.chmodSync(closed, 0o700)
    const gateway = await startInProcess({ SP_NOTEBOOK_DIR: `${closed}/notebooks` }, { notebooks: true })
    try {
      const key = await gateway.keyWith(["read", "execute"])
      const refused = await request(gateway.url, "/api/notebook-sessions", { key, body: {} })
      expect([refused.status, refused.json.code]).toEqual([503, "unavailable"])
      expect(refused.json.message).toMatch(/SP_NOTEBOOK_DIR/)
      expect(refused.text).not.toContain(closed)
    } finally {
      await gateway.stop()
    }
  }, 60_000)
})
