import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { request, type RequestOptions } from "../support/Http"
import { startInProcess } from "../support/InProcess"
import { postgresAvailable } from "../support/Servers"

const notebooksHere = fs.existsSync("/usr/bin/bwrap") && fs.existsSync("/etc/jupyter/jupyter_server_config.d/nbclassic.json")
const skip = !(await postgresAvailable()) || !notebooksHere

/** The attack on notebook sessions of 2026-11-28 (issue 29): each finding as it was reproduced, now refused. */
describe("notebook sessions under attack (issue 29)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let owner: string
  let sibling: string

  beforeAll(async () => {
    if (skip) return
    gateway = await startInProcess({ SP_PER_KEY_RPM: "100000", SP_RATE_LIMIT_GENERAL_RPM: "100000" })
    owner = await gateway.keyWith(["read", "query", "write", "execute"])
    sibling = await gateway.keyWith(["read", "write", "execute"])
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: owner, ...options })

  it.skipIf(skip)("F1: a session is its starting key's alone: another key of the same user neither reaches it nor shares its files", async () => {
    const started = await api("/api/notebook-sessions", { body: {} })
    expect(started.status, started.text).toBe(201)
    const id = started.json.id as string
    expect((await api(`/notebook/${id}/api/contents/mine.txt`, { method: "PUT", body: { type: "file", format: "text", content: "owner's" } })).status).toBe(201)
    for (const [method, route] of [
      ["GET", `/notebook/${id}/api/status`],
      ["GET", `/api/notebook-sessions/${id}`],
      ["POST", `/api/notebook-sessions/${id}/ping`],
      ["DELETE", `/api/notebook-sessions/${id}`]
    ] as const) {
      const refused = await api(route, { key: sibling, method })
      expect([method, route, refused.status, refused.json?.code]).toEqual([method, route, 404, "not_found"])
    }
    const own = await api("/api/notebook-sessions", { key: sibling, body: {} })
    expect(own.status, own.text).toBe(201)
    expect(own.json.id).not.toBe(id)
    expect((await api(`/notebook/${own.json.id}/api/contents/mine.txt`, { key: sibling })).status).toBe(404)
    expect((await api(`/api/notebook-sessions/${own.json.id}`, { key: sibling, method: "DELETE" })).status).toBe(200)
    expect((await api(`/api/notebook-sessions/${id}`, { method: "DELETE" })).status).toBe(200)
  }, 60_000)

  it.skipIf(skip)("F8: concurrent starts give one session; a start racing a delete never answers with a stopped session", async () => {
    const starts = await Promise.all(Array.from({ length: 5 }, () => api("/api/notebook-sessions", { body: {} })))
    expect(starts.map((start) => [start.status, start.json.reused]).sort()).toEqual([[201, false], [201, true], [201, true], [201, true], [201, true]])
    expect(new Set(starts.map((start) => start.json.id)).size).toBe(1)
    const id = starts[0]!.json.id as string
    const [removed, restarted] = await Promise.all([api(`/api/notebook-sessions/${id}`, { method: "DELETE" }), api("/api/notebook-sessions", { body: {} })])
    expect(removed.status).toBe(200)
    expect(restarted.json.status).toBe("running")
    // Either the start found the session before the delete ended it, or it started a new one after.
    if (restarted.json.id === id) expect(restarted.json.reused).toBe(true)
    else expect((await api(`/api/notebook-sessions/${restarted.json.id}`)).json.status).toBe("running")
    await api(`/api/notebook-sessions/${restarted.json.id}`, { method: "DELETE" })
  }, 60_000)
})
