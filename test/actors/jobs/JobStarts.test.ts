import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startModelFake } from "../../fakes/ModelFake"
import { type Gateway, localKey } from "../../support/Gateway"
import { request } from "../../support/Http"
import { startApp } from "../../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../support/Servers"

const skip = !(await postgresAvailable())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("a job starts if and only if its row commits", () => {
  let store: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let gateway: Gateway
  let key: string

  beforeAll(async () => {
    if (skip) return
    store = await createTestDatabase()
    fake = await startModelFake(() => ({ text: "done" }))
    gateway = await startApp({
      databaseUrl: store.url,
      env: { SP_LLM_PROVIDER: "openai-compatible", SP_LLM_BASE_URL: `${fake.url}/v1`, SP_LLM_MODEL: "local-model", SP_JOB_POLL_MS: "100" }
    })
    const admin = await localKey(gateway)
    key = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "runner", scopes: ["read", "query", "agent:run"] } })).json.key
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await fake?.close()
    await store?.drop()
  })

  const run = (id: string) => request(gateway.url, `/api/agent-runs/${id}`, { key }).then((r) => r.json)

  it.skipIf(skip)("a run whose row committed but whose process died before its job started (kill -9 mid-POST) is started within seconds", async () => {
    const started = await request(gateway.url, "/api/agent-runs", { key, body: { prompt: "first" } })
    expect(started.status).toBe(202)
    // What a kill between the row's commit and the job's start leaves: the row, queued, and no job.
    const orphan = `run_${"0".repeat(24)}${Date.now().toString(16).padStart(8, "0")}`
    await store.query(
      `insert into agent_runs (id, org_id, user_id, principal_kind, key_id, prompt, connection_name, conversation_id, status, max_turns)
       select $1, org_id, user_id, principal_kind, key_id, 'orphaned', null, null, 'queued', max_turns from agent_runs where id = $2`,
      [orphan, started.json.id]
    )
    const deadline = Date.now() + 10_000
    let current = await run(orphan)
    while (current.status !== "completed" && Date.now() < deadline) {
      await sleep(200)
      current = await run(orphan)
    }
    expect(current).toMatchObject({ status: "completed", answer: "done" })
  })
})
