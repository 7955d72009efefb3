import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ClickhouseFake, startClickhouseFake } from "../fakes/ClickhouseFake"
import { selfSignedCertificate } from "../fakes/FakeServer"
import { startTrinoFake, type TrinoFake } from "../fakes/TrinoFake"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"

const CH_PASSWORD = "ch-gw-Secret-5150"
const TRINO_PASSWORD = "trino-gw-Secret-8086"
const WRONG = "wrong-gw-Secret-1999"

describe("clickhouse and trino connections through a running gateway", () => {
  let gateway: Gateway
  let key: string
  let clickhouse: ClickhouseFake
  let trino: TrinoFake

  beforeAll(async () => {
    ;[gateway, clickhouse, trino] = await Promise.all([
      startApp(),
      startClickhouseFake({ users: { alice: CH_PASSWORD }, databases: ["default", "system", "analytics"] }),
      startTrinoFake({ users: { dave: TRINO_PASSWORD }, tls: selfSignedCertificate() })
    ])
    key = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
    await clickhouse?.close()
    await trino?.close()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key, ...options })
  const steps = (body: { steps: Array<{ step: string; status: string }> }) => body.steps.map((s) => `${s.step}:${s.status}`)

  const connections = () => ({
    ch: { db_type: "clickhouse", host: "127.0.0.1", port: clickhouse.port, username: "alice", database: "analytics" },
    trino: { db_type: "trino", host: "127.0.0.1", port: trino.port, username: "dave", catalog: "hive", tls: { mode: "require" } }
  })

  it("creates, tests and diagnoses each; a wrong password fails at step auth without echoing it", async () => {
    const { ch, trino: tr } = connections()
    for (const [name, body] of [
      ["ch_ok", { ...ch, password: CH_PASSWORD }],
      ["ch_bad", { ...ch, password: WRONG }],
      ["trino_ok", { ...tr, password: TRINO_PASSWORD }],
      ["trino_bad", { ...tr, password: WRONG }]
    ] as const) {
      const created = await api("/api/connections", { body: { name, ...body } })
      expect(created.status, created.text).toBe(201)
    }

    for (const name of ["ch_ok", "trino_ok"]) {
      const tested = await api(`/api/connections/${name}/test`, { method: "POST" })
      expect(tested.status).toBe(200)
      expect(tested.json).toMatchObject({ ok: true })
      expect(tested.json.latency_ms).toBeGreaterThan(0)
    }
    const chDiagnosed = await api("/api/connections/ch_ok/diagnose", { method: "POST" })
    expect(chDiagnosed.json.ok).toBe(true)
    expect(steps(chDiagnosed.json)).toEqual(["dns:ok", "tcp:ok", "tls:skipped", "auth:ok", "privileges:ok"])
    expect(chDiagnosed.json.steps.at(-1).detail).toMatch(/^3 readable tables/)
    const trinoDiagnosed = await api("/api/connections/trino_ok/diagnose", { method: "POST" })
    expect(trinoDiagnosed.json.ok).toBe(true)
    expect(steps(trinoDiagnosed.json)).toEqual(["dns:ok", "tcp:ok", "tls:ok", "auth:ok", "privileges:ok"])

    for (const name of ["ch_bad", "trino_bad"]) {
      const tested = await api(`/api/connections/${name}/test`, { method: "POST" })
      expect(tested.json).toMatchObject({ ok: false, step: "auth" })
      expect(tested.text).not.toContain(WRONG)
      const diagnosed = await api(`/api/connections/${name}/diagnose`, { method: "POST" })
      expect(diagnosed.json.ok).toBe(false)
      expect(diagnosed.json.steps.at(-1)).toMatchObject({ step: "auth", status: "failed" })
      expect(diagnosed.text).not.toContain(WRONG)
    }
    expect(gateway.logs()).not.toContain(WRONG)
    expect(gateway.logs()).not.toContain(CH_PASSWORD)

    // The gateway's checks reached the fakes as real requests through the drivers.
    expect(clickhouse.queries.some((q) => q.user === "alice" && q.settings["readonly"] === "1")).toBe(true)
    expect(trino.statements.some((s) => s.user === "dave" && s.catalog === "hive")).toBe(true)
  })
})
