import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"

describe("operational routes and local access on a self-hosted gateway", () => {
  let gateway: Gateway
  let admin: string
  const api = (p: string, options: Parameters<typeof request>[2] = {}) => request(gateway.url, p, options)

  beforeAll(async () => {
    gateway = await startApp({})
    admin = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
  })

  it("a loopback caller without a key is the local admin, audited as 'local'; a proxied one is not", async () => {
    const local = await api("/api/keys")
    expect(local.status).toBe(200)
    expect(local.json.items.map((k: { name: string }) => k.name)).toContain("local")

    const proxied = await api("/api/keys", { headers: { forwarded: "for=127.0.0.1" } })
    expect([proxied.status, proxied.json.code]).toEqual([401, "unauthenticated"])

    const rows = (await api(`/api/audit?limit=50`, { key: admin })).json.items as Array<{ request_id: string; principal: string }>
    expect(rows.find((r) => r.request_id === local.headers["x-request-id"])?.principal).toBe("local")
  })

  it("the local key is persisted in the data dir with mode 600 and survives a restart", async () => {
    const file = path.join(gateway.dataDir, ".local_api_key")
    expect(fs.readFileSync(file, "utf8").trim()).toBe(admin)
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    expect(fs.statSync(gateway.dataDir).mode & 0o077).toBe(0)

    await gateway.stop()
    gateway = await startApp({ dataDir: gateway.dataDir })
    expect(await localKey(gateway)).toBe(admin)
    expect((await api("/api/plan", { key: admin })).status).toBe(200)
  })

  it("/api/openapi.json describes every route with its security, and /docs serves the reference page", async () => {
    const doc = await api("/api/openapi.json")
    expect(doc.status).toBe(200)
    expect(doc.json.openapi).toMatch(/^3\./)
    const paths = Object.keys(doc.json.paths)
    for (const p of ["/api/keys", "/api/keys/{key_id}", "/api/audit", "/api/audit/stats", "/api/audit/export", "/api/plan", "/api/settings", "/api/security/status", "/api/metrics"]) {
      expect(paths).toContain(p)
    }
    const schemes = Object.keys(doc.json.components.securitySchemes)
    expect(schemes.length).toBeGreaterThan(0)
    type Operation = { security?: Array<Record<string, unknown>>; "x-required-scope"?: string }
    for (const [p, operations] of Object.entries(doc.json.paths as Record<string, Record<string, Operation>>)) {
      if (!p.startsWith("/api/")) continue
      for (const [method, operation] of Object.entries(operations)) {
        expect(operation.security?.flatMap(Object.keys), `${method.toUpperCase()} ${p} declares no security`).toEqual(schemes)
        expect(operation["x-required-scope"], `${method.toUpperCase()} ${p}`).toMatch(/^(read|query|write|execute|dbt_proxy|agent:run|admin|authenticated)$/)
      }
    }
    expect(doc.json.paths["/api/keys"].post["x-required-scope"]).toBe("admin")
    expect(doc.json.paths["/health"].get.security ?? []).toEqual([])
    expect(doc.text).not.toContain(admin)

    const docs = await api("/docs")
    expect(docs.status).toBe(200)
    expect(docs.headers["content-type"]).toMatch(/text\/html/)
  })

  it("/api/plan and /api/security/status report the configuration the gateway runs with", async () => {
    const plan = await api("/api/plan", { key: admin })
    expect(plan.json).toMatchObject({
      deployment_mode: "self-hosted",
      audit_retention_days: null,
      limits: { per_key_rpm: 120, per_org_rpm: 300, max_export_rows: 50_000, request_body_bytes: 2 * 1024 * 1024, metrics_streams: 20 }
    })
    const status = await api("/api/security/status", { key: admin })
    expect(status.json).toMatchObject({
      deployment_mode: "self-hosted",
      store: "embedded",
      tenant_isolation: "row_level_security",
      local_access: true,
      jwt_sessions: false,
      rate_limit_store: "memory"
    })
    expect(status.json.keys.total).toBeGreaterThanOrEqual(1)
  })

  it("GET /api/keys/self names the calling key, its scopes and role, whatever its scopes, and never the key itself", async () => {
    const created = await api("/api/keys", { key: admin, body: { name: "only-query", scopes: ["query"] } })
    expect(created.status, created.text).toBe(201)
    const self = await api("/api/keys/self", { key: created.json.key })
    expect([self.status, self.json]).toEqual([200, { kind: "api_key", user_id: "local", key_id: created.json.id, key_prefix: created.json.key.slice(0, 11), scopes: ["query"], role: "admin" }])
    expect(self.text).not.toContain(created.json.key)
    const local = (await api("/api/keys/self", { key: admin })).json
    expect([local.kind, local.scopes]).toEqual(["api_key", expect.arrayContaining(["admin", "read"])])
    const refused = await api("/api/keys/self", { key: "sp_00000000000000000000000000000000" })
    expect([refused.status, refused.json.code]).toEqual([401, "invalid_api_key"])
    expect((await api(`/api/keys/${created.json.id}`, { key: admin, method: "DELETE" })).status).toBe(204)
  })

  it("PUT /api/settings merges a valid patch; a bad one is a 400 that changes nothing", async () => {
    const before = (await api("/api/settings", { key: admin })).json
    expect(before).toEqual({ default_row_limit: 10_000, mcp_default_row_limit: 1_000, query_timeout_seconds: 30, mcp_tools: "full" })

    const put = await api("/api/settings", { key: admin, method: "PUT", body: { default_row_limit: 500, mcp_tools: "core" } })
    expect(put.status).toBe(200)
    expect(put.json).toEqual({ ...before, default_row_limit: 500, mcp_tools: "core" })

    for (const body of [{ default_row_limit: 0 }, { query_timeout_seconds: 1.5 }, { mcp_tools: "all" }, { unknown_field: 1 }, [1]]) {
      const bad = await api("/api/settings", { key: admin, method: "PUT", body })
      expect([bad.status, bad.json.code], JSON.stringify(body)).toEqual([400, "invalid_request"])
      expect(typeof bad.json.message).toBe("string")
    }
    const bounded = await api("/api/settings", { key: admin, method: "PUT", body: { default_row_limit: 0 } })
    expect(bounded.json.message).toContain("default_row_limit must be an integer between 1 and 100000")
    expect((await api("/api/settings", { key: admin })).json).toEqual(put.json)
  })

  it("the metrics stream counts this organization's requests", async () => {
    const controller = new AbortController()
    const res = await fetch(`${gateway.url}/api/metrics`, { headers: { "x-api-key": admin }, signal: controller.signal })
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/)
    const reader = res.body!.getReader()
    let text = ""
    while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value)
    controller.abort()
    const data = JSON.parse(/^data: (.*)$/m.exec(text)![1]!)
    expect(data.requests_total).toBeGreaterThan(5)
    expect(data.refused_total).toBeGreaterThanOrEqual(0)
    expect(Object.keys(data).sort()).toEqual(
      ["errors_total", "mean_latency_ms", "refused_total", "requests_total", "success_total", "uptime_seconds"]
    )
  })

  it("a metrics stream ends when its key is deleted, as every stream does", async () => {
    const created = (await api("/api/keys", { key: admin, body: { name: "metrics watcher", scopes: ["read"] } })).json
    const res = await fetch(`${gateway.url}/api/metrics`, { headers: { "x-api-key": created.key } })
    const reader = res.body!.getReader()
    let text = ""
    while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value)
    expect((await api(`/api/keys/${created.id}`, { key: admin, method: "DELETE" })).status).toBe(204)
    const deleted = Date.now()
    for (;;) {
      const chunk = await reader.read()
      if (chunk.done) break
      text += new TextDecoder().decode(chunk.value)
    }
    // Keys are held for 500 ms and checked again every second: the stream ends within a few seconds, saying why.
    expect(Date.now() - deleted).toBeLessThan(5_000)
    expect(text).toMatch(/event: error\ndata: \{"code":"invalid_api_key","message":"The stream stopped: /)
  }, 15_000)
})
