import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Eventually"
import { type Gateway, localKey, runCli, startGateway, tempDataDir } from "../support/Gateway"
import { request } from "../support/Http"

/** Refusals are audited under the org that can act on them: an admin sees brute force against its keys. */
describe("refused requests are attributed to the org whose key was used", () => {
  let gateway: Gateway
  let acmeAdmin: string
  let localAdmin: string

  beforeAll(async () => {
    const dataDir = tempDataDir()
    // A second org on a self-hosted store, made by the CLI before the gateway holds the store.
    const made = await runCli(["keys", "create", "--name", "acme-admin", "--scopes", "admin,read", "--org", "acme"], { SP_DATA_DIR: dataDir })
    expect(made.code, made.stderr).toBe(0)
    acmeAdmin = made.stdout.trim()
    gateway = await startGateway({ dataDir })
    localAdmin = await localKey(gateway)
  })
  afterAll(() => gateway?.stop())

  const refusedRows = async (key: string) => {
    const res = await request(gateway.url, "/api/audit?outcome=refused&limit=500", { key })
    expect(res.status, res.text).toBe(200)
    return res.json.items as Array<Record<string, unknown>>
  }

  it("a deleted key's and an expired key's 401s go to their org's log; an unknown key's to the one self-hosted org", async () => {
    const doomed = (await request(gateway.url, "/api/keys", { key: acmeAdmin, body: { name: "doomed", scopes: ["read"] } })).json
    expect((await request(gateway.url, `/api/keys/${doomed.id}`, { key: acmeAdmin, method: "DELETE" })).status).toBe(204)
    const attempts: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const res = await request(gateway.url, "/api/plan", { key: doomed.key })
      expect([res.status, res.json.code]).toEqual([401, "invalid_api_key"])
      attempts.push(String(res.headers["x-request-id"]))
    }
    const mcp = await request(gateway.url, "/mcp", {
      key: doomed.key,
      headers: { accept: "application/json, text/event-stream" },
      body: { jsonrpc: "2.0", id: 1, method: "tools/list" }
    })
    expect(mcp.status).toBe(401)
    attempts.push(String(mcp.headers["x-request-id"]))

    const expiring = (await request(gateway.url, "/api/keys", { key: acmeAdmin, body: { name: "expiring", scopes: ["read"], expires_at: new Date(Date.now() + 1500).toISOString() } })).json
    const expired = await eventually(
      () => request(gateway.url, "/api/plan", { key: expiring.key }),
      (res) => res.status === 401,
      "the key to expire"
    )
    expect(expired.json.message).toBe("The API key has expired")
    attempts.push(String(expired.headers["x-request-id"]))

    const unknown = await request(gateway.url, "/api/plan", { key: `sp_${"1".repeat(32)}` })
    expect(unknown.status).toBe(401)

    const acme = await refusedRows(acmeAdmin)
    for (const id of attempts) expect(acme.find((r) => r.request_id === id), id).toMatchObject({ status: 401, outcome: "refused", block_reason: "invalid_api_key" })
    expect(acme.some((r) => r.request_id === unknown.headers["x-request-id"])).toBe(false)

    const local = await refusedRows(localAdmin)
    expect(local.find((r) => r.request_id === unknown.headers["x-request-id"])).toMatchObject({ status: 401, principal: null })
    for (const id of attempts) expect(local.some((r) => r.request_id === id)).toBe(false)
  })

  it("a 403 is audited under the caller's own org", async () => {
    const reader = (await request(gateway.url, "/api/keys", { key: acmeAdmin, body: { name: "reader", scopes: ["read"] } })).json.key
    const refused = await request(gateway.url, "/api/keys", { key: reader })
    expect([refused.status, refused.json.code]).toEqual([403, "insufficient_scope"])
    const acme = await refusedRows(acmeAdmin)
    expect(acme.find((r) => r.request_id === refused.headers["x-request-id"])).toMatchObject({ status: 403, block_reason: "insufficient_scope" })
  })
})
