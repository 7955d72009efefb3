import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey, startGateway } from "../support/Gateway"
import { request, type RequestOptions } from "../support/Http"
import { makeCertificate, type SnowflakeFake, startSnowflakeFake } from "../fakes/SnowflakeFake"
import { expectKeysAndFacts, scanThrough } from "../support/SchemaScans"

const PASSWORD = "pw-snow-http-4b8e21"
const WRONG = "pw-snow-wrong-9c03aa"

// A Snowflake connection has no port: the gateway dials host:443. The fake listens there on a loopback
// address of its own (127.x.y.z), so it cannot collide with another test's server; binding 443 needs root
// or a lowered net.ipv4.ip_unprivileged_port_start.
const listenOn443 = async (certificateFor: (ip: string) => ReturnType<typeof makeCertificate>) => {
  for (let attempt = 0; attempt < 5; attempt++) {
    const ip = `127.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${2 + Math.floor(Math.random() * 250)}`
    const certificate = certificateFor(ip)
    try {
      return { certificate, fake: await startSnowflakeFake({ certificate, users: { ALICE: PASSWORD }, host: ip, port: 443 }) }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EACCES") return null
      if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error
    }
  }
  return null
}

const started = await listenOn443((ip) => makeCertificate([ip]))
if (started === null && process.env["CI"] === "true") throw new Error("cannot listen on port 443 for the Snowflake fake")
if (started === null) console.warn("skipping the Snowflake HTTP test: this user cannot listen on port 443")

describe.skipIf(started === null)("a snowflake connection over HTTP, against the REST fake", () => {
  let gateway: Gateway
  let admin: string
  const fake = started?.fake as SnowflakeFake

  beforeAll(async () => {
    gateway = await startGateway({ env: { NODE_EXTRA_CA_CERTS: started!.certificate.certPath, SP_RATE_LIMIT_EXPENSIVE_RPM: "10000" } })
    admin = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
    await fake?.close()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: admin, ...options })
  const snowflake = (name: string, password: string) => ({
    name,
    db_type: "snowflake",
    account: "acme",
    host: fake.host,
    username: "ALICE",
    password,
    warehouse: "WH",
    database: "DB"
  })

  it("creates the connection, tests it, diagnoses it; a wrong password fails at auth", async () => {
    const created = await api("/api/connections", { body: snowflake("warehouse", PASSWORD) })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ name: "warehouse", db_type: "snowflake", password_set: true })
    expect(created.text).not.toContain(PASSWORD)

    const tested = await api("/api/connections/warehouse/test", { method: "POST" })
    expect(tested.json).toMatchObject({ ok: true })
    expect(typeof tested.json.latency_ms).toBe("number")

    const diagnosed = await api("/api/connections/warehouse/diagnose", { method: "POST" })
    expect(diagnosed.json.ok).toBe(true)
    const steps = Object.fromEntries(diagnosed.json.steps.map((s: { step: string; status: string }) => [s.step, s.status]))
    expect(steps).toMatchObject({ dns: "ok", tcp: "ok", auth: "ok", privileges: "ok" })
    expect(diagnosed.json.steps.at(-1).detail).toMatch(/^3 readable tables/)

    await api("/api/connections", { body: snowflake("wrong_pw", WRONG) })
    const refused = await api("/api/connections/wrong_pw/test", { method: "POST" })
    expect(refused.json).toMatchObject({ ok: false, step: "auth" })
    expect(refused.text).not.toContain(WRONG)
    const wrongDiagnosed = await api("/api/connections/wrong_pw/diagnose", { method: "POST" })
    expect(wrongDiagnosed.json.steps.at(-1)).toMatchObject({ step: "auth", status: "failed" })

    expect(fake.logins.filter((l) => l.ok).length).toBeGreaterThanOrEqual(2)
    expect(fake.logins.filter((l) => !l.ok).length).toBe(2)
    expect(gateway.logs()).not.toContain(PASSWORD)
    expect(gateway.logs()).not.toContain(WRONG)
  })
  it("reads the database's information_schema and SHOW … KEYS over the REST API: keys in key order, clustering, comments, rows", async () => {
    const { tables, compactLines } = await scanThrough(gateway, "snowflake", snowflake("shop", PASSWORD))
    expectKeysAndFacts(tables, "snowflake")
    expect(compactLines).toContain("shop.orders (5.4K rows): id NUMBER*, customer_id NUMBER*→customers.id, total NUMBER")
  })
})
