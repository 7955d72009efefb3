import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const MIB = 1024 * 1024
const HTML = "<!doctype html><html><body><h1>Revenue by month</h1><script>document.title = 'ok'</script></body></html>"

for (const store of ["embedded", "postgresql"] as const) {
  describe(`reports over REST and MCP (issue 20), ${store} store`, () => {
    let gateway: Gateway
    let storeDb: TestDatabase | undefined
    let admin: string
    let reader: string

    beforeAll(async () => {
      if (skip) return
      storeDb = store === "postgresql" ? await createTestDatabase() : undefined
      gateway = await startApp(storeDb === undefined ? {} : { databaseUrl: storeDb.url })
      admin = await localKey(gateway)
      reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "reader", scopes: ["read", "write"] } })).json.key
    }, 60_000)
    afterAll(async () => {
      await gateway?.stop()
      await storeDb?.drop()
    })

    const api = (route: string, options: Parameters<typeof request>[2] = {}) => request(gateway.url, route, { key: admin, ...options })

    it.skipIf(skip)("publish, list, view, change and delete; reads for read, writes for admin", async () => {
      const created = await api("/api/reports", { body: { title: "  Revenue by month ", html: HTML, data: { months: [1, 2, 3] } } })
      expect(created.status, created.text).toBe(201)
      expect(created.json).toMatchObject({ title: "Revenue by month", kind: "report", html: HTML, data: { months: [1, 2, 3] }, bytes: HTML.length, view_count: 0 })
      const id = created.json.id
      expect(id).toMatch(/^rep_[0-9a-f]{32}$/)

      const listed = (await request(gateway.url, "/api/reports", { key: reader })).json
      expect(listed.items).toEqual([expect.objectContaining({ id, title: "Revenue by month", kind: "report" })])
      expect(listed.items[0].html).toBeUndefined()
      expect((await request(gateway.url, `/api/reports/${id}`, { key: reader })).json).toMatchObject({ html: HTML, view_count: 1 })

      const changed = await api(`/api/reports/${id}`, { method: "PATCH", body: { kind: "dashboard", data: null } })
      expect(changed.json).toMatchObject({ kind: "dashboard", data: null, html: HTML, title: "Revenue by month" })
      for (const [method, route, body] of [
        ["POST", "/api/reports", { title: "x", html: HTML }],
        ["PATCH", `/api/reports/${id}`, { title: "x" }],
        ["DELETE", `/api/reports/${id}`, undefined]
      ] as const) {
        const refused = await request(gateway.url, route, { key: reader, method, ...(body === undefined ? {} : { body }) })
        expect([method, refused.status, refused.json.code]).toEqual([method, 403, "insufficient_scope"])
      }
      expect((await api(`/api/reports/${id}`, { method: "DELETE" })).json).toEqual({ id, deleted: true })
      expect((await api(`/api/reports/${id}`)).status).toBe(404)
      expect((await api(`/api/reports/${id}`, { method: "DELETE" })).status).toBe(404)
    })

    it.skipIf(skip)("takes HTML past the 2 MiB a request body may be elsewhere, up to 5 MiB; refuses the rest clearly", async () => {
      const big = `<html><body>${"x".repeat(3 * MIB)}</body></html>`
      const large = await api("/api/reports", { body: { title: "large", html: big } })
      expect(large.status, large.text.slice(0, 200)).toBe(201)
      expect(large.json.bytes).toBe(big.length)
      // Other routes keep the general cap.
      const elsewhere = await api("/api/knowledge", { body: { scope: "org", category: "context", title: "big", body: "x".repeat(3 * MIB) } })
      expect([elsewhere.status, elsewhere.json.code]).toEqual([413, "payload_too_large"])

      const tooBig = await api("/api/reports", { body: { title: "too big", html: "x".repeat(5 * MIB + 1) } })
      expect([tooBig.status, tooBig.json.code, tooBig.json.message]).toEqual([413, "payload_too_large", `html is ${5 * MIB + 1} bytes; a report holds at most ${5 * MIB}`])
      const hugeRequest = await api("/api/reports", { body: { title: "huge", html: "x".repeat(25 * MIB) } })
      expect([hugeRequest.status, hugeRequest.json.code]).toEqual([413, "payload_too_large"])
      for (const body of [
        { title: "", html: HTML },
        { title: "t".repeat(201), html: HTML },
        { title: "x", html: "" },
        { title: "x", html: "a\u0000b" },
        { title: "x", html: HTML, kind: "slides" },
        { title: "x", html: HTML, extra: 1 }
      ]) {
        const refused = await api("/api/reports", { body })
        expect([refused.status, refused.json.code], JSON.stringify(body).slice(0, 80)).toEqual([400, "invalid_request"])
      }
      expect((await api("/api/reports?limit=1")).json.items.map((r: any) => r.title)).toEqual(["large"])
      // Data as any JSON the client sent: escaped NULs and lone surrogates kept as sent; nesting too deep to write is a 400, not a 500.
      const odd = { "k\u0000": "v\u0000", lone: "\ud800" }
      const kept = await api("/api/reports", { body: { title: "odd data", html: HTML, data: odd } })
      expect(kept.status, kept.text).toBe(201)
      expect((await api(`/api/reports/${kept.json.id}`)).json.data).toEqual(odd)
      const deep = `{"title":"deep","html":"<p>x</p>","data":${"[".repeat(6000)}${"]".repeat(6000)}}`
      const refused = await request(gateway.url, "/api/reports", { key: admin, method: "POST", rawBody: deep, headers: { "content-type": "application/json" } })
      expect([refused.status, refused.json.code]).toEqual([400, "invalid_request"])
    })

    it.skipIf(skip)("MCP: an admin's client publishes a report; others do not see the tool", async () => {
      const connect = async (key: string) => {
        const client = new Client({ name: "reports-test", version: "1.0.0" })
        await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gateway.url), { requestInit: { headers: { "x-api-key": key } } }))
        return client
      }
      const admins = await connect(admin)
      const published = await admins.callTool({ name: "publish_report", arguments: { title: "From MCP", html: HTML, kind: "dashboard" } })
      const result = JSON.parse((published.content as Array<{ text: string }>)[0]!.text)
      expect(result).toMatchObject({ title: "From MCP", kind: "dashboard", bytes: HTML.length })
      expect((await api(`/api/reports/${result.id}`)).json.html).toBe(HTML)
      const readers = await connect(reader)
      expect((await readers.listTools()).tools.map((t) => t.name)).not.toContain("publish_report")
      await admins.close()
      await readers.close()
    })
  })
}
