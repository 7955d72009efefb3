import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { type IdentityProvider, startIdentityProvider } from "../support/IdentityProvider"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const MCP_ACCEPT = "application/json, text/event-stream"
const listTools = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }

describe("with local access turned off (SP_LOCAL_ACCESS=false)", () => {
  let gateway: Gateway
  beforeAll(async () => {
    gateway = await startApp({ env: { SP_LOCAL_ACCESS: "false" } })
  })
  afterAll(() => gateway?.stop())

  it("a keyless request from this machine is a 401 on REST and on MCP alike, before any key exists", async () => {
    const rest = await request(gateway.url, "/api/keys")
    expect(rest.status).toBe(401)
    const mcp = await request(gateway.url, "/mcp", { key: null, body: listTools, headers: { accept: MCP_ACCEPT } })
    expect(mcp.status, mcp.text).toBe(401)
    expect(mcp.json).toMatchObject({ code: "unauthenticated" })
  })
})

describe("local access over HTTP (self-hosted, no key)", () => {
  let gateway: Gateway
  let key: string
  beforeAll(async () => {
    gateway = await startApp({ web: true })
    key = await localKey(gateway)
  })
  afterAll(() => gateway?.stop())

  const keyNames = async () => (await request(gateway.url, "/api/keys", { key })).json.items.map((k: { name: string }) => k.name)
  const createAsLocal = (name: string, options: RequestOptions = {}) =>
    request(gateway.url, "/api/keys", { body: { name, scopes: ["admin", "read"] }, ...options })

  it("an Origin on another localhost port is refused; the gateway's own and the web app's origins are accepted", async () => {
    const webPort = new URL(gateway.webUrl!).port
    for (const origin of ["http://localhost:5173", "http://127.0.0.1:8080", `https://127.0.0.1:${gateway.port}`, "http://localhost"]) {
      const res = await createAsLocal(`from-${origin}`, { headers: { origin } })
      expect(res.status, `${origin}: ${res.text}`).toBe(403)
      expect(res.json.code).toBe("forbidden")
    }
    expect(await keyNames()).not.toEqual(expect.arrayContaining([expect.stringMatching(/^from-/)]))
    for (const [name, origin] of [
      ["own", `http://127.0.0.1:${gateway.port}`],
      ["own-localhost", `http://localhost:${gateway.port}`],
      ["web", `http://localhost:${webPort}`]
    ] as const) {
      const res = await createAsLocal(name, { headers: { origin } })
      expect(res.status, `${origin}: ${res.text}`).toBe(201)
    }
  })

  it("a state-changing body that is not application/json is refused with 415 and changes nothing", async () => {
    const body = JSON.stringify({ name: "simple-form", scopes: ["admin"] })
    for (const contentType of [undefined, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const res = await request(gateway.url, "/api/keys", { rawBody: body, headers: contentType === undefined ? {} : { "content-type": contentType } })
      expect(res.status, `${contentType}: ${res.text}`).toBe(415)
      expect(res.json).toMatchObject({ code: "unsupported_media_type", message: expect.stringContaining("application/json") })
    }
    const withKey = await request(gateway.url, "/api/keys", { key, method: "POST", rawBody: body, headers: { "content-type": "text/plain" } })
    expect(withKey.status).toBe(415)
    expect(await keyNames()).not.toContain("simple-form")
    const charset = await request(gateway.url, "/api/keys", { rawBody: JSON.stringify({ name: "charset", scopes: ["read"] }), headers: { "content-type": "Application/JSON; charset=utf-8" } })
    expect(charset.status, charset.text).toBe(201)
    // A DELETE without a body needs no content type.
    const made = await request(gateway.url, "/api/keys", { key, body: { name: "to-delete", scopes: ["read"] } })
    expect((await request(gateway.url, `/api/keys/${made.json.id}`, { key, method: "DELETE" })).status).toBe(204)
  })

  it("the local key cannot be deleted: the refusal says why and how to turn local access off, and the key keeps working", async () => {
    const keys = (await request(gateway.url, "/api/keys", { key })).json.items as Array<{ id: string; name: string }>
    const local = keys.find((k) => k.name === "local")!
    const refused = await request(gateway.url, `/api/keys/${local.id}`, { key, method: "DELETE" })
    expect(refused.status, refused.text).toBe(409)
    expect(refused.json).toMatchObject({ code: "conflict", message: expect.stringContaining("SP_LOCAL_ACCESS=false") })
    expect((await request(gateway.url, "/api/keys", { key })).status).toBe(200)
    expect((await request(gateway.url, "/local-api-key")).json.key).toBe(key)
    expect(await keyNames()).toContain("local")
  })

  it("any proxy header from loopback, even empty, means the request is not local", async () => {
    for (const header of ["x-real-ip", "true-client-ip", "cf-connecting-ip", "x-forwarded-host", "x-forwarded-for", "x-forwarded-proto", "forwarded"]) {
      for (const value of ["127.0.0.1", ""]) {
        const res = await request(gateway.url, "/api/keys", { headers: { [header]: value } })
        expect(res.status, `${header}: "${value}": ${res.text}`).toBe(401)
        expect(res.json.code).toBe("unauthenticated")
      }
    }
    expect((await request(gateway.url, "/api/keys")).status).toBe(200)
  })

  it("a keyless request another site's page makes a browser send is not local, even a GET: only its own origin's, a typed URL's or a non-browser's", async () => {
    for (const site of ["cross-site", "same-site", "anything-else"]) {
      const res = await request(gateway.url, "/api/knowledge?q=revenue", { headers: { "sec-fetch-site": site } })
      expect([site, res.status, res.json.code]).toEqual([site, 401, "unauthenticated"])
    }
    for (const site of ["same-origin", "none"]) expect((await request(gateway.url, "/api/keys", { headers: { "sec-fetch-site": site } })).status).toBe(200)
  })

  it("MCP refuses a page's form post", async () => {
    const form = await request(gateway.url, "/mcp", { key, rawBody: JSON.stringify(listTools), headers: { "content-type": "text/plain", accept: MCP_ACCEPT } })
    expect(form.status).toBe(415)
  })
})

const hasPostgres = await postgresAvailable()

describe.skipIf(!hasPostgres)("session tokens (cloud): issuer, audience, and never on /mcp", () => {
  let idp: IdentityProvider
  let database: TestDatabase
  let gateway: Gateway
  beforeAll(async () => {
    idp = await startIdentityProvider()
    database = await createTestDatabase()
    gateway = await startApp({
      databaseUrl: database.url,
      env: {
        SP_DEPLOYMENT_MODE: "cloud",
        SP_JWKS_URL: idp.jwksUrl,
        SP_JWT_ISSUER: "https://idp.example.test",
        SP_JWT_AUDIENCE: "sluice",
        SP_RATE_LIMIT_AUTH_RPM: "10000"
      }
    })
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
    await idp?.close()
  })

  const withJwt = (path: string, jwt: string, options: RequestOptions = {}) =>
    request(gateway.url, path, { ...options, headers: { ...options.headers, authorization: `Bearer ${jwt}` } })

  it("a token from another issuer or for another audience is refused; the right ones are accepted", async () => {
    const claims = { sub: "user_iss", orgId: "org_iss", admin: true }
    for (const [name, extra] of [
      ["no issuer or audience", {}],
      ["another issuer", { issuer: "https://evil.example.test", audience: "sluice" }],
      ["another audience", { issuer: "https://idp.example.test", audience: "another-app" }],
      ["no audience", { issuer: "https://idp.example.test" }]
    ] as const) {
      const res = await withJwt("/api/keys", await idp.token({ ...claims, ...extra }))
      expect(res.status, `${name}: ${res.text}`).toBe(401)
      expect(res.json.code).toBe("unauthenticated")
    }
    expect(await database.query("select id from organizations where id = 'org_iss'")).toEqual([])
    const good = await withJwt("/api/keys", await idp.token({ ...claims, issuer: "https://idp.example.test", audience: "sluice" }))
    expect(good.status, good.text).toBe(200)
  })

  it("a session token on /mcp is a 401 that says MCP takes API keys; a key works there", async () => {
    const jwt = await idp.token({ sub: "user_mcp", orgId: "org_mcp", admin: true, issuer: "https://idp.example.test", audience: "sluice" })
    const refused = await withJwt("/mcp", jwt, { body: listTools, headers: { accept: MCP_ACCEPT } })
    expect(refused.status, refused.text).toBe(401)
    expect(refused.json).toMatchObject({ code: "unauthenticated", message: expect.stringMatching(/MCP takes API keys/) })
    const made = await withJwt("/api/keys", jwt, { body: { name: "mcp-key", scopes: ["read"] } })
    expect(made.status, made.text).toBe(201)
    const listed = await request(gateway.url, "/mcp", { key: made.json.key, body: listTools, headers: { accept: MCP_ACCEPT } })
    expect(listed.status, listed.text).toBe(200)
  })
})
