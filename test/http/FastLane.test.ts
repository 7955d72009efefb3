import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AppConfig } from "../../layers/AppConfig"
import { makeFastLane } from "../../src/gate/FastLane"
import type { Gateway } from "../support/Gateway"
import { request, type RequestOptions } from "../support/Http"
import { startApp } from "../support/InProcess"

/** Requests at the fast lane's edge: what it answers, and what it must leave to the Effect app. */
const CALLS: ReadonlyArray<readonly [string, RequestOptions]> = [
  ["/health", {}],
  ["/health/", {}],
  ["/health?probe=1", {}],
  ["/health", { method: "HEAD" }],
  ["/health", { method: "POST", body: {} }],
  ["/health", { method: "GET", rawBody: Buffer.from("x"), headers: { "content-type": "application/json" } }],
  ["/health", { headers: { host: "evil.example" } }],
  ["/health", { headers: { origin: "http://evil.example" } }],
  ["/healthz", {}],
  ["/health/x", {}]
]

/** A response as a client sees it, less what differs by the instant (date, request id). */
const seen = (result: Awaited<ReturnType<typeof request>>) => {
  const { date: _date, "x-request-id": requestId, ...headers } = result.headers
  return { status: result.status, headers, body: result.text, requestId: typeof requestId === "string" && /^[0-9a-f-]{36}$/.test(requestId) }
}

describe("the fast lane: hot routes answered in front of the Effect app, as it answers them (issue 28)", () => {
  let fast: Gateway
  let effectOnly: Gateway

  beforeAll(async () => {
    ;[fast, effectOnly] = await Promise.all([startApp({ env: { SP_FAST_LANE: "true" } }), startApp({ env: { SP_FAST_LANE: "false" } })])
  }, 60_000)
  afterAll(async () => {
    await Promise.all([fast?.stop(), effectOnly?.stop()])
  })

  it("every request at its edge gets the same answer with the fast lane on and off: status, headers, body", async () => {
    for (const [path, options] of CALLS) {
      const [a, b] = [seen(await request(fast.url, path, options)), seen(await request(effectOnly.url, path, options))]
      expect([path, options, a], JSON.stringify(b)).toEqual([path, options, b])
    }
  })

  it("answers /health itself and leaves every other request, a refusal included, untouched", async () => {
    const config = await Effect.runPromise(Effect.provide(AppConfig, AppConfig.Default))
    const lane = makeFastLane(config)
    let left = 0
    const server: Server = createServer((req, res) => {
      if (lane(req, res, () => res.writeHead(598).end())) return
      left++
      res.writeHead(599).end()
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const answered = []
      for (const [path, options] of CALLS) answered.push([path, options.method ?? "GET", (await request(url, path, options)).status])
      expect(answered.filter(([, , status]) => status === 200)).toEqual([
        ["/health", "GET", 200],
        ["/health/", "GET", 200],
        ["/health?probe=1", "GET", 200]
      ])
      expect(left).toBe(CALLS.length - 3)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
