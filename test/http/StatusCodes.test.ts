import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const TWO_MIB = 2 * 1024 * 1024

describe.each([
  { store: "embedded", skip: false },
  { store: "postgresql", skip: !hasPostgres }
])("status codes over HTTP on the $store store", ({ store, skip }) => {
  let gateway: Gateway
  let database: TestDatabase | undefined
  let admin: string

  beforeAll(async () => {
    if (skip) return
    database = store === "postgresql" ? await createTestDatabase() : undefined
    gateway = await startApp(database ? { databaseUrl: database.url } : {})
    admin = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (path: string, options: Parameters<typeof request>[2] = {}) => request(gateway.url, path, options)
  const createKey = (body: unknown, key = admin) => api("/api/keys", { key, body })

  it.skipIf(skip)("400 for a JSON body nested past 100 levels, on every route, before it is decoded (it was a 500: decoding recursed per level)", async () => {
    const deep = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`
    for (const route of ["/api/keys", "/api/knowledge", "/api/query", "/api/reports"]) {
      const refused = await api(route, { key: admin, method: "POST", rawBody: deep(10_000), headers: { "content-type": "application/json" } })
      expect([route, refused.status, refused.json.code, refused.json.message]).toEqual([route, 400, "invalid_request", "The JSON body nests deeper than 100 levels"])
    }
    // Nesting in strings is text, and bodies at the limit decode as before.
    const named = await createKey({ name: `${"[".repeat(500)}`, scopes: ["read"] })
    expect([named.status, named.json.code]).toEqual([400, "invalid_request"])
    expect(named.json.message).not.toMatch(/nests deeper/)
    const atLimit = await api("/api/reports", { key: admin, body: { title: "nested", html: "<p>x</p>", data: JSON.parse(deep(95)) } })
    expect(atLimit.status, atLimit.text).toBe(201)
    expect((await api("/health")).status).toBe(200)
  })

  it.skipIf(skip)("200 /health is liveness only and needs no key", async () => {
    const res = await api("/health")
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ status: "healthy" })
  })

  it.skipIf(skip)("201 creates a key shown once, 200 lists it without the secret, and the key works by either header", async () => {
    const created = await createKey({ name: "reader", scopes: ["read", "query"] })
    expect(created.status).toBe(201)
    expect(created.json.key).toMatch(/^sp_[0-9a-f]{32}$/)
    expect(created.json.prefix).toBe(created.json.key.slice(0, 11))
    expect(created.json).toMatchObject({ name: "reader", scopes: ["read", "query"], organization: "local", expires_at: null })

    const listed = await api("/api/keys", { key: admin })
    expect(listed.status).toBe(200)
    const entry = listed.json.items.find((k: { id: string }) => k.id === created.json.id)
    expect(entry).toMatchObject({ name: "reader", prefix: created.json.prefix })
    expect(JSON.stringify(listed.json)).not.toContain(created.json.key)

    const viaHeader = await api("/api/plan", { key: created.json.key })
    const viaBearer = await api("/api/plan", { headers: { authorization: `Bearer ${created.json.key}` } })
    expect([viaHeader.status, viaBearer.status]).toEqual([200, 200])
  })

  it.skipIf(skip)("400 invalid_request for bad key input, and nothing is created", async () => {
    const before = (await api("/api/keys", { key: admin })).json.items.length
    const cases: Array<[unknown, string]> = [
      [{ name: "", scopes: ["read"] }, "name"],
      [{ name: "x".repeat(65), scopes: ["read"] }, "name"],
      [{ name: "n1", scopes: [] }, "scopes"],
      [{ name: "n2", scopes: ["root"] }, "scopes"],
      [{ name: "n3", scopes: ["read"], expires_at: "2001-01-01T00:00:00Z" }, "expires_at"],
      [{ name: "n4", scopes: ["read"], organization: "other" }, "organization"]
    ]
    for (const [body, field] of cases) {
      const res = await createKey(body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.json.code).toBe("invalid_request")
      expect(res.json.message).toContain(field)
    }
    const malformed = await api("/api/keys", { key: admin, rawBody: "{not json", headers: { "content-type": "application/json" } })
    expect(malformed.status).toBe(400)
    expect(malformed.json.code).toBe("invalid_request")
    expect((await api("/api/keys", { key: admin })).json.items.length).toBe(before)
  })

  it.skipIf(skip)("401 unauthenticated without a credential, invalid_api_key for bad, unknown or expired keys", async () => {
    const spoofed = await api("/api/keys", { headers: { "x-forwarded-for": "127.0.0.1" } })
    expect(spoofed.status).toBe(401)
    expect(spoofed.json.code).toBe("unauthenticated")

    const basic = await api("/api/keys", { headers: { authorization: "Basic YTpi" } })
    expect([basic.status, basic.json.code]).toEqual([401, "unauthenticated"])

    for (const key of ["sp_short", `sp_${"0".repeat(32)}`, `SP_${"a".repeat(32)}`]) {
      const res = await api("/api/keys", { key })
      expect(res.status).toBe(401)
      expect(res.json.code).toBe("invalid_api_key")
      expect(res.text).not.toContain(key)
    }

    const soon = await createKey({ name: "short-lived", scopes: ["read"], expires_at: new Date(Date.now() + 1500).toISOString() })
    expect(soon.status).toBe(201)
    expect((await api("/api/plan", { key: soon.json.key })).status).toBe(200)
    await new Promise((r) => setTimeout(r, 1700))
    const expired = await api("/api/plan", { key: soon.json.key })
    expect([expired.status, expired.json.code]).toEqual([401, "invalid_api_key"])
    expect(expired.json.message).toContain("expired")
  })

  it.skipIf(skip)("403 insufficient_scope names the scope; 403 forbidden for a foreign Host or Origin", async () => {
    const reader = (await createKey({ name: "scoped-reader", scopes: ["read"] })).json.key
    const res = await api("/api/keys", { key: reader })
    expect(res.status).toBe(403)
    expect(res.json).toMatchObject({ code: "insufficient_scope", required_scope: "admin" })
    const exported = await api("/api/audit/export", { key: reader })
    expect(exported.json.required_scope).toBe("admin")

    const rebinding = await api("/api/plan", { key: admin, headers: { host: "attacker.example:80" } })
    expect([rebinding.status, rebinding.json.code]).toEqual([403, "forbidden"])
    const csrf = await api("/api/keys", { key: admin, headers: { origin: "https://attacker.example" }, body: { name: "csrf", scopes: ["admin"] } })
    expect([csrf.status, csrf.json.code]).toEqual([403, "forbidden"])
    const sameOrigin = await api("/api/plan", { key: admin, headers: { origin: gateway.url } })
    expect(sameOrigin.status).toBe(200)
  })

  it.skipIf(skip)("404 not_found for an unknown key id or route; 409 conflict for a duplicate key name", async () => {
    const missing = await api("/api/keys/key_doesnotexist", { key: admin, method: "DELETE" })
    expect([missing.status, missing.json.code]).toEqual([404, "not_found"])
    const route = await api("/api/nothing-here", { key: admin })
    expect([route.status, route.json.code]).toEqual([404, "not_found"])

    expect((await createKey({ name: "twin", scopes: ["read"] })).status).toBe(201)
    const twin = await createKey({ name: "twin", scopes: ["read"] })
    expect([twin.status, twin.json.code]).toEqual([409, "conflict"])
  })

  it.skipIf(skip)("413 payload_too_large for bodies over 2 MiB, declared or chunked", async () => {
    const big = Buffer.alloc(TWO_MIB + 1, 0x20)
    const declared = await api("/api/keys", { key: admin, rawBody: big, headers: { "content-type": "application/json" } })
    expect([declared.status, declared.json.code]).toEqual([413, "payload_too_large"])
    const chunked = await api("/api/keys", { key: admin, rawBody: big, chunked: true, headers: { "content-type": "application/json" } })
    expect([chunked.status, chunked.json.code]).toEqual([413, "payload_too_large"])
    expect((await api("/health")).status).toBe(200)
  })

  it.skipIf(skip)("a chunked body within the cap is served as any other; one over it is refused and has no effect", async () => {
    const small = await api("/api/keys", { key: admin, rawBody: JSON.stringify({ name: "chunked-small", scopes: ["read"] }), chunked: true, headers: { "content-type": "application/json" } })
    expect([small.status, small.json.name]).toEqual([201, "chunked-small"])

    const padded = JSON.stringify({ name: "chunked-big", scopes: ["read"], pad: " ".repeat(TWO_MIB) })
    const big = await api("/api/keys", { key: admin, rawBody: padded, chunked: true, headers: { "content-type": "application/json" } })
    expect([big.status, big.json.code]).toEqual([413, "payload_too_large"])
    const names = (await api("/api/keys", { key: admin })).json.items.map((k: { name: string }) => k.name)
    expect(names).toContain("chunked-small")
    expect(names).not.toContain("chunked-big")
  })

  it.skipIf(skip)("415 unsupported_media_type for a multipart or form body on a JSON route, never a 500, and nothing is created", async () => {
    const form = new FormData()
    form.append("name", "from-a-form")
    form.append("scopes", "admin")
    form.append("connection_name", "pg")
    form.append("sql", "select 1")
    form.append("file", new Blob(["id\n1\n"], { type: "text/csv" }), "rows.csv")
    for (const path of ["/api/query", "/api/keys"]) {
      const multipart = await fetch(new URL(path, gateway.url), { method: "POST", headers: { "x-api-key": admin }, body: form })
      expect([path, multipart.status, await multipart.json()]).toEqual([path, 415, { code: "unsupported_media_type", message: expect.stringContaining("application/json") }])
      // A multipart type without a boundary, and a URL-encoded form.
      const bodies: Array<[string, string]> = [["multipart/form-data", "name=x"], ["application/x-www-form-urlencoded", "name=from-a-form&scopes=admin"]]
      for (const [type, body] of bodies) {
        const refused = await api(path, { key: admin, rawBody: body, headers: { "content-type": type } })
        expect([path, type, refused.status, refused.json.code]).toEqual([path, type, 415, "unsupported_media_type"])
      }
    }
    const keys = await api("/api/keys", { key: admin })
    expect(keys.json.items.map((k: { name: string }) => k.name)).not.toContain("from-a-form")
  })

  it.skipIf(skip)("204 deletes a key; the very next request with it is refused", async () => {
    const created = (await createKey({ name: "doomed", scopes: ["read"] })).json
    expect((await api("/api/plan", { key: created.key })).status).toBe(200)
    const deleted = await api(`/api/keys/${created.id}`, { key: admin, method: "DELETE" })
    expect(deleted.status).toBe(204)
    const after = await api("/api/plan", { key: created.key })
    expect([after.status, after.json.code]).toEqual([401, "invalid_api_key"])
    expect((await api(`/api/keys/${created.id}`, { key: admin, method: "DELETE" })).status).toBe(404)
  })

  it.skipIf(skip)("429 for the 21st concurrent metrics stream, with Retry-After", async () => {
    const controllers: Array<AbortController> = []
    const open = async () => {
      const controller = new AbortController()
      controllers.push(controller)
      const res = await fetch(`${gateway.url}/api/metrics`, { headers: { "x-api-key": admin }, signal: controller.signal })
      return res
    }
    try {
      const streams = await Promise.all(Array.from({ length: 20 }, open))
      expect(streams.map((s) => s.status)).toEqual(Array(20).fill(200))
      expect(streams[0]!.headers.get("content-type")).toContain("text/event-stream")
      const reader = streams[0]!.body!.getReader()
      const first = new TextDecoder().decode((await reader.read()).value)
      expect(first).toContain("event: metrics")
      const refused = await api("/api/metrics", { key: admin })
      expect([refused.status, refused.json.code, refused.headers["retry-after"]]).toEqual([429, "rate_limited", "15"])
    } finally {
      controllers.forEach((c) => c.abort())
    }
    await new Promise((r) => setTimeout(r, 300))
    const again = await fetch(`${gateway.url}/api/metrics`, { headers: { "x-api-key": admin } })
    expect(again.status).toBe(200)
    await again.body?.cancel()
  })

  it.skipIf(skip)("every error body is JSON with code and message, and carries the security headers", async () => {
    const res = await api("/api/keys", { key: `sp_${"1".repeat(32)}` })
    expect(Object.keys(res.json).sort()).toEqual(["code", "message"])
    expect(res.headers["x-content-type-options"]).toBe("nosniff")
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
  })
})
