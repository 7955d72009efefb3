import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { type IdentityProvider, startIdentityProvider } from "../support/IdentityProvider"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const GATEWAY_KEY = "sk-ant-gateway-operator-key-0000"
const ORG_KEY = "sk-ant-organization-own-key-1111"

describe("organization and user secrets (issue 19 item 3), cloud mode on PostgreSQL", () => {
  let gateway: Gateway
  let database: TestDatabase
  let idp: IdentityProvider

  beforeAll(async () => {
    if (skip) return
    idp = await startIdentityProvider()
    database = await createTestDatabase()
    gateway = await startApp({
      databaseUrl: database.url,
      env: { SP_DEPLOYMENT_MODE: "cloud", SP_JWKS_URL: idp.jwksUrl, SP_LLM_API_KEY: GATEWAY_KEY, SP_RATE_LIMIT_AUTH_RPM: "10000" }
    })
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
    await idp?.close()
  })

  const as = (jwt: string) => (path: string, options: RequestOptions = {}) =>
    request(gateway.url, path, { ...options, headers: { ...options.headers, authorization: `Bearer ${jwt}` } })

  it.skipIf(skip)("set, listed without values, encrypted at rest, per organization and per user; llm-key only hands out the organization's own", async () => {
    const ann = as(await idp.token({ sub: "user_ann", orgId: "org_sa", admin: true }))
    const bob = as(await idp.token({ sub: "user_bob", orgId: "org_sa" }))
    const cat = as(await idp.token({ sub: "user_cat", orgId: "org_sb", admin: true }))

    expect((await ann("/api/org/secrets")).json).toEqual({ secrets: [] })
    expect([(await ann("/api/org/secrets/llm-key")).status, (await ann("/api/org/secrets/llm-key")).json.code]).toEqual([404, "not_found"])
    const put = await ann("/api/org/secrets", { method: "PUT", body: { secrets: { llm_api_key: ORG_KEY, warehouse_token: "tok-123" } } })
    expect(put.status, put.text).toBe(200)
    expect(put.json.secrets.map((s: any) => [s.name, s.updated_by])).toEqual([["llm_api_key", "user_ann"], ["warehouse_token", "user_ann"]])
    expect(put.text).not.toContain(ORG_KEY)
    // Another member sees which are set; another organization sees none.
    expect((await bob("/api/org/secrets")).json.secrets.map((s: any) => s.name)).toEqual(["llm_api_key", "warehouse_token"])
    expect((await cat("/api/org/secrets")).json).toEqual({ secrets: [] })
    const stored = await database.query<{ ciphertext: string }>("select ciphertext from secrets where org_id = 'org_sa'")
    expect(stored).toHaveLength(2)
    for (const row of stored) expect(row.ciphertext).not.toMatch(/sk-ant|tok-123/)

    // A runtime with execute gets the organization's own key; a cloud gateway never hands out its operator's.
    expect((await ann("/api/org/secrets/llm-key")).json).toEqual({ provider: "anthropic", base_url: null, model: "claude-sonnet-4-5", api_key: ORG_KEY, source: "organization" })
    expect((await cat("/api/org/secrets/llm-key")).status).toBe(404)
    const audit = (await ann("/api/audit?limit=20")).json.items
    const read = audit.find((row: any) => row.route === "/api/org/secrets/llm-key" && row.status === 200)
    expect(read).toBeDefined()
    expect(JSON.stringify(audit)).not.toContain(ORG_KEY)

    // User secrets are each user's own.
    expect((await bob("/api/user/secrets", { method: "PUT", body: { secrets: { notes_token: "bob-only" } } })).json.secrets.map((s: any) => s.name)).toEqual(["notes_token"])
    expect((await ann("/api/user/secrets")).json).toEqual({ secrets: [] })
    expect((await bob("/api/org/secrets")).json.secrets.map((s: any) => s.name)).toEqual(["llm_api_key", "warehouse_token"])

    // null removes one; the others stay.
    expect((await ann("/api/org/secrets", { method: "PUT", body: { secrets: { warehouse_token: null } } })).json.secrets.map((s: any) => s.name)).toEqual(["llm_api_key"])
  })

  it.skipIf(skip)("bad input is a 400 that changes nothing", async () => {
    const dee = as(await idp.token({ sub: "user_dee", orgId: "org_sc", admin: true }))
    const bodies = [
      {},
      { secrets: { "Bad-Name": "x" } },
      { secrets: { ok: "" } },
      { secrets: { ok: 5 } },
      { secrets: { ok: "x" }, extra: true },
      { secrets: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`s${i}`, "x"])) }
    ]
    for (const body of bodies) {
      const refused = await dee("/api/org/secrets", { method: "PUT", body })
      expect([refused.status, refused.json.code], JSON.stringify(body).slice(0, 80)).toEqual([400, "invalid_request"])
    }
    expect((await dee("/api/org/secrets")).json).toEqual({ secrets: [] })
  })
})
