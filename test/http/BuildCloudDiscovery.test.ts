import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startBuildCloudFake } from "../fakes/BuildCloudFake"
import { listenFake } from "../fakes/FakeServer"
import { request } from "../support/Http"
import { startInProcess } from "../support/InProcess"

const TOKEN = "dbtc_3Xk9cE2mQ7rT1vW8yZ4aB6nL0pS5uH"
const projects = [
  ...Array.from({ length: 130 }, (_, i) => ({ id: 1000 + i, name: `team_${i}` })),
  {
    id: 7,
    name: "jaffle",
    dbt_project_subdirectory: "transform",
    repository: { remote_url: "https://x-access-token:ghs_leakyToken123@github.com/acme/jaffle.git" },
    connection: { type: "postgres" }
  },
  { id: 8, name: "retired", state: 2 },
  // Remotes that carry credentials where a URL parser gives up, or in the query (attack 31 F2).
  { id: 9, name: "gitlab", repository: { remote_url: "https://oauth2:glpat-leaky9@gitlab.com:group/repo.git" } },
  { id: 10, name: "query", repository: { remote_url: "https://gitlab.com/acme/q.git?access_token=leaky10#leaky10b" } },
  { id: 11, name: "scp", repository: { remote_url: "deploy:leaky11@example.com:acme/s.git" } }
]

describe("discovering projects on a hosted dbt build service (dbt Cloud's Admin API v3, a protocol fake) (issue 30)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let service: Awaited<ReturnType<typeof startBuildCloudFake>>
  let admin: string
  let writer: string

  beforeAll(async () => {
    service = await startBuildCloudFake({ token: TOKEN, accountId: 4242, projects })
    gateway = await startInProcess({ SP_BUILDCLOUD_URL: service.url })
    admin = await gateway.keyWith(["read", "write", "admin"])
    writer = await gateway.keyWith(["read", "write"])
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await service?.stop()
  })

  const discover = (body: unknown, key = admin) => request(gateway.url, "/api/buildcloud/projects", { key, body })

  it("lists every active project across pages, with its remote stripped of credentials; the token goes to the service only", async () => {
    const found = await discover({ account_id: 4242, api_token: TOKEN })
    expect(found.status, found.text).toBe(200)
    expect(found.json.complete).toBe(true)
    expect(found.json.items).toHaveLength(134)
    const remotes = Object.fromEntries(found.json.items.map((p: { name: string; repository_url: string | null }) => [p.name, p.repository_url]))
    expect([remotes.gitlab, remotes.query, remotes.scp]).toEqual(["https://gitlab.com:group/repo.git", "https://gitlab.com/acme/q.git", "example.com:acme/s.git"])
    expect(found.text).not.toMatch(/leaky/)
    expect(found.json.items.find((p: { id: number }) => p.id === 7)).toEqual({
      id: 7,
      name: "jaffle",
      repository_url: "https://github.com/acme/jaffle.git",
      subdirectory: "transform",
      connection_type: "postgres",
      created_at: "2026-01-02 03:04:05.678901+00:00"
    })
    expect(found.json.items.some((p: { name: string }) => p.name === "retired")).toBe(false)
    expect(found.text).not.toMatch(/ghs_leakyToken123|x-access-token/)
    expect(found.text).not.toContain(TOKEN)
    expect(service.requests.map((r) => r.path)).toEqual(["/api/v3/accounts/4242/projects/?limit=100&offset=0", "/api/v3/accounts/4242/projects/?limit=100&offset=100"])
    expect(service.requests.every((r) => r.authorization === `Token ${TOKEN}`)).toBe(true)
  })

  it("refuses a caller without admin, a token the service refuses, an unknown account, and an access URL off the service's hosts", async () => {
    expect((await discover({ account_id: 4242, api_token: TOKEN }, writer)).status).toBe(403)
    const badToken = await discover({ account_id: 4242, api_token: "dbtc_wrong" })
    expect([badToken.status, badToken.json.code]).toEqual([400, "invalid_request"])
    expect(badToken.json.message).toMatch(/refused the API token/)
    expect(badToken.text).not.toContain("dbtc_wrong")
    const unknown = await discover({ account_id: 99, api_token: TOKEN })
    expect([unknown.status, unknown.json.code]).toEqual([404, "not_found"])
    const asked = service.requests.length
    for (const access_url of [
      "http://cloud.getdbt.com",
      "https://169.254.169.254",
      "https://evil.example.com",
      "https://cloud.getdbt.com.evil.example",
      "https://cloud.getdbt.com:8443",
      "https://user:pw@cloud.getdbt.com",
      "https://cloud.getdbt.com/api/redirect?to=x",
      `${service.url}`
    ]) {
      const refused = await discover({ account_id: 4242, api_token: TOKEN, access_url })
      expect([access_url, refused.status, refused.json.code]).toEqual([access_url, 400, "invalid_request"])
    }
    for (const body of [{ account_id: 0, api_token: TOKEN }, { account_id: 4242 }, { account_id: 4242, api_token: "a b" }, { account_id: 4242, api_token: TOKEN, extra: 1 }]) {
      expect((await discover(body)).status).toBe(400)
    }
    // None of the refused requests reached the service.
    expect(service.requests.length).toBe(asked)
  })

  it("an answer larger than any listing is cut off, not held", async () => {
    let sent = 0
    const endless = await listenFake(async (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.write('{"data": [')
      const chunk = `${'{"id": 1, "name": "x"},'.repeat(4096)}`
      // 64 MiB unless the reader stops first.
      while (sent < 64 * 1024 * 1024 && !res.destroyed) {
        sent += chunk.length
        if (!res.write(chunk)) await new Promise((resolve) => res.once("drain", resolve).once("close", resolve))
      }
      res.end("]}")
    })
    const hostile = await startInProcess({ SP_BUILDCLOUD_URL: `http://127.0.0.1:${endless.port}` })
    try {
      const key = await hostile.keyWith(["admin"])
      const answered = await request(hostile.url, "/api/buildcloud/projects", { key, body: { account_id: 1, api_token: TOKEN } })
      expect([answered.status, answered.json.code]).toEqual([503, "unavailable"])
      expect(answered.json.message).toMatch(/answer was larger than/)
      expect(sent).toBeLessThan(48 * 1024 * 1024)
    } finally {
      await hostile.stop()
      await new Promise<void>((resolve) => endless.server.close(() => resolve()))
    }
  })

  it("a hostile service: a page of more projects than asked for is refused", async () => {
    const hostile = await listenFake(async (req, res) => {
      const url = new URL(req.url ?? "/", "http://x")
      if (url.searchParams.get("offset") === "0" && req.headers.authorization === `Token ${TOKEN}`) {
        res.writeHead(200, { "content-type": "application/json" })
        return void res.end(JSON.stringify({ data: Array.from({ length: 150 }, (_, i) => ({ id: i + 1, name: `p${i}` })), extra: {} }))
      }
      res.writeHead(400, { "content-type": "application/json" })
      res.end("{}")
    })
    const other = await startInProcess({ SP_BUILDCLOUD_URL: `http://127.0.0.1:${hostile.port}` })
    try {
      const key = await other.keyWith(["admin"])
      const paged = await request(other.url, "/api/buildcloud/projects", { key, body: { account_id: 1, api_token: TOKEN } })
      expect([paged.status, paged.json.code]).toEqual([503, "unavailable"])
      expect(paged.json.message).toMatch(/more than 100 projects on a page/)
    } finally {
      await other.stop()
      await new Promise<void>((resolve) => hostile.server.close(() => resolve()))
    }
  })

  it("a service that is down answers 503", async () => {
    const down = await startInProcess({ SP_BUILDCLOUD_URL: "http://127.0.0.1:9" })
    try {
      const key = await down.keyWith(["admin"])
      const answered = await request(down.url, "/api/buildcloud/projects", { key, body: { account_id: 4242, api_token: TOKEN } })
      expect([answered.status, answered.json.code, answered.json.message]).toEqual([503, "unavailable", "The build service could not be reached; try again later"])
    } finally {
      await down.stop()
    }
  })
})
