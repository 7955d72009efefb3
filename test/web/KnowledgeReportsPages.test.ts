import * as dgram from "node:dgram"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildWebApp, chromiumAvailable, collectErrors, launchChromium, step } from "../support/Browser"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"

const skip = !chromiumAvailable()

/**
 * A report that tries every way out of its frame: a script (the page's storage and DOM, its own
 * storage and cookies, /api, the network, a form, top navigation, WebRTC) and the static ways to
 * reach the network (an image, a stylesheet, a refresh, a frame, a CSS background).
 */
const escapingReport = (canary: string, stunPort: number) => `<!doctype html><html><head>
<link rel="stylesheet" href="${canary}/stylesheet"><meta http-equiv="refresh" content="0;url=${canary}/refresh">
<style>h1 { background: url(${canary}/background) }</style></head>
<body><h1>Quarterly revenue</h1><img src="${canary}/image" alt=""><iframe src="${canary}/frame"></iframe><pre id="out">static</pre><script>
const results = {}
const attempt = (name, action) => { try { results[name] = String(action()) } catch (e) { results[name] = "blocked" } }
attempt("parent_storage", () => parent.sessionStorage.length)
attempt("parent_dom", () => parent.document.body.innerHTML.length)
attempt("own_storage", () => sessionStorage.length)
attempt("cookie", () => document.cookie)
attempt("top", () => { top.location.href = "${canary}/top"; return "navigated" })
new Image().src = "${canary}/image"
const form = document.createElement("form"); form.action = "${canary}/form"; form.method = "post"; document.body.append(form)
attempt("form", () => { form.submit(); return "submitted" })
attempt("webrtc", () => {
  const peer = new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:${stunPort}" }] })
  peer.createDataChannel("out")
  peer.createOffer().then((offer) => peer.setLocalDescription(offer))
  return "created"
})
Promise.all([
  fetch("/api/keys").then(() => "reached", () => "blocked").then((r) => (results.api = r)),
  fetch("${canary}/fetch").then(() => "reached", () => "blocked").then((r) => (results.network = r))
]).then(() => { document.getElementById("out").textContent = JSON.stringify(results) })
</script></body></html>`

describe.skipIf(skip)("the Knowledge and Reports pages in a real browser (issue 20)", () => {
  let gateway: Gateway
  let browser: Browser
  let page: Page
  let errors: Array<string>
  let admin: string
  let canary: http.Server
  const canaryHits: Array<string> = []

  beforeAll(async () => {
    buildWebApp()
    canary = http.createServer((req, res) => (canaryHits.push(req.url ?? ""), res.end("ok")))
    await new Promise<void>((resolve) => canary.listen(0, "127.0.0.1", resolve))
    ;[gateway, browser] = await Promise.all([startApp({ web: true }), launchChromium()])
    admin = await localKey(gateway)
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
    errors = collectErrors(page)
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await gateway?.stop()
    canary?.close()
  })

  it("reviews a proposal, finds an entry by search as you type, edits it with a preview, reads its history as a diff, writes a new one, archives", async () => {
    const web = gateway.webUrl!
    await request(gateway.url, "/api/knowledge", {
      key: admin,
      body: { scope: "org", category: "rules", title: "net-revenue-definition", body: "Net revenue is `analytics.fct_orders.net_revenue_usd`.\n\n- excludes tax\n- minus refunds" }
    })
    const writer = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "agent", scopes: ["read", "write"] } })).json.key
    const client = new Client({ name: "web-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gateway.url), { requestInit: { headers: { "x-api-key": writer } } }))
    await client.callTool({ name: "propose_knowledge", arguments: { scope: "org", category: "decisions", title: "attribution-model", body: "Last non-direct click, 30 days." } })
    await client.close()

    await step(page, "knowledge review", async () => {
      await page.goto(`${web}/knowledge`)
      await page.getByRole("heading", { level: 1, name: "Knowledge" }).waitFor()
      const review = page.getByRole("region", { name: "To review" })
      await review.getByRole("button", { name: "attribution-model" }).click()
      const entry = page.getByRole("article", { name: "Entry: attribution-model" })
      await entry.getByText("proposed, not approved").waitFor()
      await entry.getByRole("button", { name: "Approve" }).click()
      await entry.getByText("active", { exact: true }).waitFor()
      await review.waitFor({ state: "detached" })
    })

    await step(page, "knowledge search and edit", async () => {
      await page.getByLabel("Search").fill("revnue definiton")
      const results = page.getByRole("list", { name: "Search results" })
      await results.getByRole("button", { name: "net-revenue-definition" }).click()
      const entry = page.getByRole("article", { name: "Entry: net-revenue-definition" })
      // The body as markdown: code and a list, never raw markup.
      await entry.locator("code", { hasText: "analytics.fct_orders.net_revenue_usd" }).waitFor()
      await entry.getByRole("listitem").filter({ hasText: "excludes tax" }).waitFor()
      await entry.getByRole("button", { name: "Edit" }).click()
      const body = entry.getByLabel("Body (markdown)")
      await body.fill("Net revenue is `analytics.fct_orders.net_revenue_usd`.\n\n- excludes tax\n- minus refunds and discounts")
      await entry.getByRole("region", { name: "Preview" }).getByText("minus refunds and discounts").waitFor()
      await entry.getByRole("button", { name: "Save" }).click()
      await entry.getByText(/version 2/).waitFor()
      await entry.getByRole("button", { name: "History" }).click()
      const history = entry.getByRole("list", { name: "History" })
      await history.getByText("Version 1 → 2").waitFor()
      await history.locator(".diff-removed", { hasText: "minus refunds" }).waitFor()
      await history.locator(".diff-added", { hasText: "minus refunds and discounts" }).waitFor()
    })

    await step(page, "knowledge new entry, usage and archive", async () => {
      await page.getByRole("button", { name: "New entry" }).click()
      const form = page.getByRole("form", { name: "New entry" })
      await form.getByLabel("Title").fill("Bad Title")
      await form.getByLabel("Body (markdown)").fill("Fiscal weeks start on Monday.")
      await form.getByLabel("Title").fill("fiscal-weeks")
      await form.getByRole("button", { name: "Save" }).click()
      const entry = page.getByRole("article", { name: "Entry: fiscal-weeks" })
      await entry.getByText("Fiscal weeks start on Monday.").waitFor()
      await page.getByRole("button", { name: "Usage" }).click()
      await page.getByRole("region", { name: "Usage" }).getByText("net-revenue-definition").waitFor()
      await entry.getByRole("button", { name: "Archive" }).click()
      await entry.getByRole("button", { name: "Yes, archive" }).click()
      await entry.getByText("archived", { exact: true }).waitFor()
    })
    expect(errors).toEqual([])
  }, 90_000)

  it("shows a report in a frame where no script runs and nothing reaches the page, the API or the network", async () => {
    const web = gateway.webUrl!
    const canaryUrl = `http://127.0.0.1:${(canary.address() as AddressInfo).port}`
    // WebRTC goes around connect-src: a STUN listener hears whether the frame's peer connection got out.
    const stun = dgram.createSocket("udp4")
    const stunPackets: Array<number> = []
    stun.on("message", (message) => stunPackets.push(message.length))
    await new Promise<void>((resolve) => stun.bind(0, "127.0.0.1", resolve))
    const published = await request(gateway.url, "/api/reports", { key: admin, body: { title: "Quarterly revenue", html: escapingReport(canaryUrl, stun.address().port) } })
    expect(published.status, published.text).toBe(201)

    await step(page, "reports view", async () => {
      await page.goto(`${web}/reports`)
      await page.getByRole("heading", { level: 1, name: "Reports" }).waitFor()
      await page.getByRole("button", { name: "View" }).click()
      const frame = page.frameLocator('iframe[title="Quarterly revenue"]')
      await frame.getByRole("heading", { name: "Quarterly revenue" }).waitFor()
      // No script runs in the frame: what it would have tried never started.
      const out = frame.locator("#out")
      await out.waitFor()
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      expect(await out.textContent()).toBe("static")
      // Nothing reached the network (the canary, the STUN listener), and the page did not move.
      expect(canaryHits).toEqual([])
      expect(stunPackets).toEqual([])
      stun.close()
      expect(new URL(page.url()).pathname).toBe("/reports")
      // The frame is an opaque origin with no permissions.
      expect(await page.locator('iframe[title="Quarterly revenue"]').getAttribute("sandbox")).toBe("")
    })

    await step(page, "reports delete", async () => {
      await page.getByRole("button", { name: "Delete" }).click()
      await page.getByRole("button", { name: "Yes, delete" }).click()
      await page.getByText("No reports yet.").waitFor()
    })
    // What the browser logs about the report's refused attempts is the report's own, not the app's.
    expect(errors.filter((e) => !/Content Security Policy|sandbox|Blocked|ERR_BLOCKED|Failed to fetch|report-frame/i.test(e))).toEqual([])
  }, 60_000)
})
