import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startModelFake } from "../fakes/ModelFake"
import { evalSetUp } from "../support/EvalSet"
import { eventually } from "../support/Eventually"
import { type Gateway, localKey, startGateway, tempDataDir } from "../support/Gateway"
import { request } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const MANIFEST = `name: autorun
defaults:
  timeout_seconds: 60
tasks:
  - id: a
    class: read
    prompt: "What is 6 times 7?"
    checks: [{ name: answer, type: number, gold: 42 }]
  - id: b
    class: read
    prompt: "What is 6 times 8?"
    checks: [{ name: answer, type: number, gold: 48 }]
`

describe.skipIf(skip)("evaluation triggers: autorun on knowledge changes across two replicas, proposals evaluated, manual starts (issue 32)", () => {
  let store: TestDatabase
  let warehouse: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let replicas: Array<Gateway> = []
  let admin: string
  let writer: string
  let work: string
  /** Model answers wait on this while it is set (to keep a run in flight). */
  let hold: Promise<void> | null = null

  const runs = () => request(replicas[0]!.url, "/api/evals/runs", { key: admin }).then((r) => r.json.items as Array<{ id: string; trigger: string; status: string }>)
  const requests = () => store.query<{ entries: Array<string>; due_in: number }>("select entries, extract(epoch from due_at - now())::float8 as due_in from eval_autorun_requests")
  const addEntry = (replica: Gateway, title: string) =>
    request(replica.url, "/api/knowledge", { key: admin, body: { scope: "org", category: "rules", title, body: `The rule called ${title}.` } }).then((r) => {
      expect(r.status, r.text).toBe(201)
      return r.json.id as string
    })
  const propose = async (replica: Gateway, title: string) => {
    const client = new Client({ name: "autorun-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", replica.url), { requestInit: { headers: { "x-api-key": writer } } }))
    await client.callTool({ name: "propose_knowledge", arguments: { scope: "org", category: "decisions", title, body: "Counted when paid." } })
    await client.close()
    const listed = await request(replica.url, "/api/knowledge?status=pending", { key: admin })
    return (listed.json.items as Array<{ id: string; title: string }>).find((entry) => entry.title === title)!.id
  }
  const ended = (id: string) =>
    eventually(
      () => request(replicas[0]!.url, `/api/evals/runs/${id}`, { key: admin }).then((r) => r.json),
      (run) => ["completed", "failed"].includes(run.status),
      `run ${id} ended`,
      60_000
    )

  beforeAll(async () => {
    store = await createTestDatabase()
    warehouse = await createTestDatabase()
    fake = await startModelFake(async (req) => {
      if (hold !== null) await hold
      return { text: /6 times 7/.test(req.raw) ? "It is 42." : "It is 48." }
    })
    const env = {
      SP_ENCRYPTION_KEY: "replicas-share-this-key",
      SP_ENCRYPTION_SALT: "replicas-share-this-salt",
      SP_PER_KEY_RPM: "100000",
      SP_PER_ORG_RPM: "100000",
      SP_LLM_PROVIDER: "anthropic",
      SP_LLM_BASE_URL: fake.url,
      SP_LLM_API_KEY: "sk-ant-test-autorun",
      SP_LLM_MODEL: "claude-sonnet-4-5"
    }
    // Replicas share the store and the data volume (the workspace projects' repositories), as a compose stack's do.
    const dataDir = tempDataDir()
    // Two processes: each is a runner of the job cluster, as replicas are.
    replicas = await Promise.all([startGateway({ databaseUrl: store.url, dataDir, env }), startGateway({ databaseUrl: store.url, dataDir, env })])
    admin = (await request(replicas[0]!.url, "/api/keys", { key: await localKey(replicas[0]!), body: { name: "staff", scopes: ["read", "query", "write", "admin"] } })).json.key
    writer = (await request(replicas[0]!.url, "/api/keys", { key: admin, body: { name: "agent", scopes: ["read", "write"] } })).json.key
    work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-autorun-"))
    await evalSetUp(replicas[0]!.url, admin, warehouse.name, work, MANIFEST)
  }, 120_000)
  afterAll(async () => {
    for (const replica of replicas) await replica.stop()
    await fake?.close()
    await store?.drop()
    await warehouse?.drop()
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true })
  })

  it("asks for nothing while autorun is off", async () => {
    await addEntry(replicas[0]!, "before-autorun")
    expect(await requests()).toEqual([])
  })

  it("coalesces entries added and approved on both replicas into one run two minutes after the first; a pending proposal asks for nothing", async () => {
    expect((await request(replicas[1]!.url, "/api/evals/config", { key: admin, method: "PUT", body: { autorun: true } })).status).toBe(200)
    const pending = await propose(replicas[1]!, "paid-orders")
    expect(await requests()).toEqual([])

    const added = await Promise.all([addEntry(replicas[0]!, "r1"), addEntry(replicas[1]!, "r2"), addEntry(replicas[0]!, "r3"), addEntry(replicas[1]!, "r4")])
    expect((await request(replicas[1]!.url, `/api/knowledge/${pending}/approve`, { key: admin, method: "POST" })).status).toBe(200)
    const [waiting, ...others] = await requests()
    expect(others).toEqual([])
    expect([...waiting!.entries].sort()).toEqual([...added, pending].sort())
    expect(waiting!.due_in).toBeGreaterThan(100)
    expect(waiting!.due_in).toBeLessThanOrEqual(120)

    // Both replicas' loops look every 5 s: nothing starts before the request is due.
    await sleep(6_000)
    expect(await runs()).toEqual([])
    // Two minutes pass.
    await store.query("update eval_autorun_requests set due_at = now() - interval '1 second'")
    const [run] = await eventually(runs, (listed) => listed.length > 0, "the autorun started", 20_000)
    expect(run!.trigger).toBe("knowledge_change")
    expect((await ended(run!.id)).status).toBe("completed")
    expect(await requests()).toEqual([])
    await sleep(6_000)
    expect((await runs()).map((listed) => listed.id)).toEqual([run!.id])

    // A change after the run waits its own two minutes.
    await addEntry(replicas[0]!, "r5")
    const [next] = await requests()
    expect(next!.due_in).toBeGreaterThan(100)
    await sleep(6_000)
    expect(await runs()).toHaveLength(1)
    await store.query("delete from eval_autorun_requests")
  }, 180_000)

  it("waits with a due request while the organization has a run in flight: autoruns never pile up (attack 42 F2)", async () => {
    let release = () => {}
    hold = new Promise<void>((resolve) => (release = resolve))
    const inFlight = await request(replicas[0]!.url, "/api/evals/runs", { key: admin, body: {} })
    expect(inFlight.status, inFlight.text).toBe(202)
    const before = (await runs()).length
    await addEntry(replicas[1]!, "during-a-run")
    await store.query("update eval_autorun_requests set due_at = now() - interval '1 second'")
    await sleep(7_000)
    expect(await runs()).toHaveLength(before)
    expect(await requests()).toHaveLength(1)
    hold = null
    release()
    await ended(inFlight.json.id)
    const [autorun] = await eventually(runs, (listed) => listed.length === before + 1, "the waiting autorun started", 20_000)
    expect(autorun!.trigger).toBe("knowledge_change")
    await ended(autorun!.id)
  }, 120_000)

  it("evaluates a proposal on the live base (evaluate_change), never a baseline for later runs; a person's start in the web app is manual", async () => {
    const proposal = await propose(replicas[0]!, "refunds-net")
    const evaluated = await request(replicas[0]!.url, "/api/evals/runs", { key: admin, body: { doc_ids: [proposal] } })
    expect(evaluated.status, evaluated.text).toBe(202)
    expect(evaluated.json.trigger).toBe("evaluate_change")
    await ended(evaluated.json.id)
    const manual = await request(replicas[1]!.url, "/api/evals/runs", { key: admin, body: { trigger: "manual" } })
    expect(manual.status, manual.text).toBe(202)
    expect(manual.status, manual.text).toBe(202)
    expect(manual.json.trigger).toBe("manual")
    await ended(manual.json.id)
    const refused = await request(replicas[1]!.url, "/api/evals/runs", { key: admin, body: { trigger: "knowledge_change" } })
    expect(refused.status).toBe(400)

    // Records are written as runs end, just after their status.
    const records = (
      await eventually(
        () => request(replicas[0]!.url, "/api/evals/accuracy", { key: admin }),
        (answer) => answer.json.items.some((record: { run_id: string }) => record.run_id === manual.json.id),
        "the manual run recorded"
      )
    ).json.items
    const [manualRecord, evaluatedRecord] = records
    // Compared with the autorun's run: the proposal (and r5, added since) are what is new.
    expect(evaluatedRecord).toMatchObject({ run_id: evaluated.json.id, trigger: "evaluate_change" })
    expect(evaluatedRecord.knowledge).toContain(`${proposal}@1`)
    expect(evaluatedRecord.changes).toContainEqual({ kind: "knowledge_added", detail: proposal })
    expect(manualRecord.run_id).toBe(manual.json.id)
    expect(manualRecord.comparison.baseline_run_ids).not.toContain(evaluated.json.id)
  }, 180_000)
})
