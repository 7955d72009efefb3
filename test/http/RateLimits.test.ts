import { randomInt } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { redisAvailable, TEST_REDIS_URL } from "../support/Servers"

const hasRedis = await redisAvailable()
const someIp = () => `198.51.${randomInt(1, 255)}.${randomInt(1, 255)}`
const from = (ip: string) => ({ "x-forwarded-for": ip })

describe("rate limits in one process", () => {
  let gateway: Gateway
  let key: string
  beforeAll(async () => {
    gateway = await startApp({
      env: {
        SP_TRUSTED_PROXIES: "127.0.0.1",
        SP_RATE_LIMIT_AUTH_RPM: "3",
        SP_RATE_LIMIT_GENERAL_RPM: "5",
        SP_PER_KEY_RPM: "2"
      }
    })
    key = await localKey(gateway)
  })
  afterAll(() => gateway?.stop())

  it("per IP: the auth budget refuses the 4th key request with 429 and Retry-After; another address is unaffected", async () => {
    const ip = someIp()
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await request(gateway.url, "/api/keys", { key, headers: from(ip) })).status)
    expect(statuses).toEqual([200, 200, 200])
    const refused = await request(gateway.url, "/api/keys", { key, headers: from(ip) })
    expect(refused.status).toBe(429)
    expect(refused.json.code).toBe("rate_limited")
    const retryAfter = Number(refused.headers["retry-after"])
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect((await request(gateway.url, "/api/keys", { key, headers: from(someIp()) })).status).toBe(200)
  })

  it("per IP: the general budget counts every request, whatever the credential", async () => {
    const ip = someIp()
    for (let i = 0; i < 5; i++) await request(gateway.url, "/api/plan", { key: i % 2 ? key : `sp_${"0".repeat(32)}`, headers: from(ip) })
    const refused = await request(gateway.url, "/api/plan", { key, headers: from(ip) })
    expect([refused.status, refused.json.code]).toEqual([429, "rate_limited"])
  })

  it("per key: expensive routes stop at SP_PER_KEY_RPM across addresses", async () => {
    const first = await request(gateway.url, "/api/audit/export", { key, headers: from(someIp()) })
    const second = await request(gateway.url, "/api/audit/export", { key, headers: from(someIp()) })
    const third = await request(gateway.url, "/api/audit/export", { key, headers: from(someIp()) })
    expect([first.status, second.status, third.status]).toEqual([200, 200, 429])
    expect(third.json.message).toContain("key")
    expect((await request(gateway.url, "/api/plan", { key, headers: from(someIp()) })).status).toBe(200)
  })
})

describe.skipIf(!hasRedis)("rate limits shared through Redis", () => {
  const gateways: Array<Gateway> = []
  afterAll(() => Promise.all(gateways.map((g) => g.stop())))

  it("two gateways draw from one per-IP budget", async () => {
    const env = { SP_TRUSTED_PROXIES: "127.0.0.1", SP_RATE_LIMIT_GENERAL_RPM: "4", REDIS_URL: TEST_REDIS_URL }
    gateways.push(...(await Promise.all([startApp({ env }), startApp({ env })])))
    const [a, b] = gateways as [Gateway, Gateway]
    const ip = someIp()
    const hit = (g: Gateway) => request(g.url, "/api/plan", { key: `sp_${"0".repeat(32)}`, headers: from(ip) })
    const statuses = [(await hit(a)).status, (await hit(b)).status, (await hit(a)).status, (await hit(b)).status]
    expect(statuses).toEqual([401, 401, 401, 401])
    expect((await hit(a)).status).toBe(429)
    expect((await hit(b)).status).toBe(429)
  })

  it("limits that do not divide a minute evenly (7 and 700 per minute) are served and enforced, and the start-up probe answers", async () => {
    const env = { SP_TRUSTED_PROXIES: "127.0.0.1", SP_RATE_LIMIT_GENERAL_RPM: "700", SP_PER_KEY_RPM: "7", REDIS_URL: TEST_REDIS_URL }
    const gateway = await startApp({ env })
    gateways.push(gateway)
    const key = await localKey(gateway)

    const exports = []
    for (let i = 0; i < 8; i++) exports.push((await request(gateway.url, "/api/audit/export", { key, headers: from(someIp()) })).status)
    expect(exports).toEqual([200, 200, 200, 200, 200, 200, 200, 429])

    const ip = someIp()
    const statuses = new Map<number, number>()
    const worker = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const { status } = await request(gateway.url, "/api/plan", { key, headers: from(ip) })
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
      }
    }
    await Promise.all(Array.from({ length: 20 }, () => worker(35)))
    expect(Object.fromEntries(statuses)).toEqual({ 200: 700 })
    const refused = await request(gateway.url, "/api/plan", { key, headers: from(ip) })
    expect([refused.status, refused.json.code]).toEqual([429, "rate_limited"])
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(30)
    expect(gateway.logs()).not.toContain("does not answer")
  })

  it("an unreachable rate-limit store fails closed with 503, and /health stays up", async () => {
    const port = await freePort()
    const gateway = await startApp({ env: { REDIS_URL: `redis://127.0.0.1:${port}` } })
    gateways.push(gateway)
    const key = await localKey(gateway).catch(() => null)
    const res = await request(gateway.url, "/api/plan", key ? { key } : {})
    expect([res.status, res.json.code]).toEqual([503, "unavailable"])
    expect((await request(gateway.url, "/health")).status).toBe(200)
  })
})
