import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ModelReply, type ModelRequest, startModelFake } from "../fakes/ModelFake"
import { evalSetUp } from "../support/EvalSet"
import { eventually } from "../support/Eventually"
import { type Gateway, localKey, tempDataDir } from "../support/Gateway"
import { request } from "../support/Http"
import { startApp } from "../support/InProcess"
import { startSmtpServer } from "../support/Smtp"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
/** A message's quoted-printable body as text (soft line breaks joined, escapes read). */
const quotedPrintable = (raw: string) =>
  Buffer.from(raw.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))), "latin1").toString("utf8")
const TASKS = 10

/** Ten read tasks, each asking for a multiple of seven. */
const MANIFEST = `name: sevens
dbt_project: jaffle
defaults:
  timeout_seconds: 60
tasks:
${Array.from({ length: TASKS }, (_, i) => `  - id: s${i}
    class: read${i === 0 ? "\n    covers: [analytics.STG_ORDERS, raw.orders]" : ""}
    prompt: "TASK s${i}: what is ${i} times 7?"
    checks: [{ name: product, type: number, gold: ${i * 7} }]`).join("\n")}
`

describe.skipIf(skip)("evaluation history: accuracy records and regressions (issue 32)", () => {
  let gateway: Gateway
  let admin: string
  let database: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>
  let work: string
  /** Tasks the model now gets wrong, and tasks it gets wrong every other time it is asked. */
  let wrong = new Set<string>()
  let flaky = new Set<string>()
  const asked = new Map<string, number>()

  const script = async (req: ModelRequest): Promise<ModelReply> => {
    const match = /TASK (s(\d+))/.exec(req.raw)
    if (match === null) return { text: "I do not know." }
    const task = match[1]!
    // One task's agent reads two of the project's models (a CTE named like a third does not count).
    if (task === "s0" && req.toolResults.length === 0) {
      return { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "with int_orders_joined as (select 1 as id) select count(*) from fct_orders f join dim_customers d on f.id = d.id join int_orders_joined i on true" } }] }
    }
    asked.set(task, (asked.get(task) ?? 0) + 1)
    const miss = wrong.has(task) || (flaky.has(task) && asked.get(task)! % 2 === 0)
    return { text: miss ? "It is 1000." : `It is ${Number(match[2]) * 7}.` }
  }

  const history = () => request(gateway.url, "/api/evals/accuracy", { key: admin })
  const runToEnd = async (body: object = {}) => {
    const started = await request(gateway.url, "/api/evals/runs", { key: admin, body })
    expect(started.status, started.text).toBe(202)
    const id = started.json.id as string
    const run = await eventually(
      () => request(gateway.url, `/api/evals/runs/${id}`, { key: admin }).then((r) => r.json),
      (found) => found.status === "completed",
      `run ${id} completed`,
      60_000
    )
    // Its record is written as it ends, just after its status.
    await eventually(history, (answer) => answer.json.items.some((record: { run_id: string }) => record.run_id === id), `run ${id} recorded`)
    return run
  }

  beforeAll(async () => {
    database = await createTestDatabase()
    await database.query("create table fct_orders (id int); create table dim_customers (id int);")
    fake = await startModelFake((req) => script(req))
    smtp = await startSmtpServer()
    gateway = await startApp({
      dataDir: tempDataDir(),
      env: { SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000", SP_LLM_PROVIDER: "anthropic", SP_LLM_BASE_URL: fake.url, SP_LLM_API_KEY: "sk-ant-test-accuracy", SP_LLM_MODEL: "claude-sonnet-4-5", SP_SMTP_URL: smtp.url, SP_PROJECT_ROOTS: path.join(import.meta.dirname, "../fixtures/dbt"), SP_SMTP_FROM: "Sluice Evals <evals@example.com>" }
    })
    admin = (await request(gateway.url, "/api/keys", { key: await localKey(gateway), body: { name: "staff", scopes: ["read", "query", "write", "admin"] } })).json.key
    work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-accuracy-"))
    await evalSetUp(gateway.url, admin, database.name, work, MANIFEST)
    const project = await request(gateway.url, "/api/projects", { key: admin, body: { name: "jaffle", path: "jaffle" } })
    expect(project.status, project.text).toBe(201)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await fake?.close()
    await smtp?.close()
    await database?.drop()
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true })
  })

  it("records every completed run; a run after a knowledge entry was added that drops past the threshold is a regression, with the entry as the one change and the tasks that flipped", async () => {
    const first = await runToEnd()
    const second = await runToEnd()
    let answer = await history()
    expect(answer.status, answer.text).toBe(200)
    expect(answer.json.items.map((record: { run_id: string }) => record.run_id)).toEqual([second.id, first.id])
    const [latest, earliest] = answer.json.items
    expect(earliest).toMatchObject({ accuracy: 1, comparison: null, changes: [], regressed: false, trigger: "api", eval_set_ref: first.eval_set_ref })
    expect(earliest.build_fingerprint).toBe(first.build_fingerprint)
    expect(earliest.tasks).toHaveLength(TASKS)
    expect(latest).toMatchObject({ accuracy: 1, regressed: false, changes: [], comparison: { baseline_run_ids: [first.id], baseline: 100, drop: 0, flipped: [], regression: null } })
    expect(answer.json.regressions).toEqual([])
    // Coverage of the set's dbt project: stg_orders declared, fct_orders and dim_customers read by the agent.
    expect(earliest.coverage).toMatchObject({
      overall: { covered: 3, total: 5, percent: 60 },
      staging: { covered: 1, total: 2, percent: 50 },
      intermediate: { covered: 0, total: 1, percent: 0 },
      marts: { covered: 2, total: 2, percent: 100 },
      models: [
        { name: "dim_customers", declared: false, observed: true },
        { name: "fct_orders", declared: false, observed: true },
        { name: "stg_orders", declared: true, observed: false }
      ],
      audit_rows_capped: false,
      statements_unparsed: 0
    })
    expect(earliest.coverage.audit_rows_read).toBeGreaterThanOrEqual(1)
    expect((await request(gateway.url, `/api/evals/runs/${first.id}`, { key: admin })).json.coverage).toEqual(earliest.coverage)

    const entry = await request(gateway.url, "/api/knowledge", {
      key: admin,
      body: { scope: "org", category: "rules", title: "sevens-are-odd", body: "Multiply by seven and add a thousand." }
    })
    expect(entry.status, entry.text).toBe(201)
    wrong = new Set(["s1", "s2", "s3"])
    const third = await runToEnd({ notify_emails: ["data-team@example.com", "lead@example.com"] })
    expect(third.accuracy).toBeCloseTo(0.7, 6)

    answer = await history()
    const record = answer.json.items[0]
    expect(record).toMatchObject({
      run_id: third.id,
      regressed: true,
      knowledge: [`${entry.json.id}@1`],
      changes: [{ kind: "knowledge_added", detail: entry.json.id }],
      comparison: { baseline_run_ids: [second.id, first.id], baseline: 100, accuracy: 70, drop: 30, regression: "drop_over_threshold" }
    })
    expect(record.comparison.flipped).toEqual([
      { task_id: "s1", change: "broke" },
      { task_id: "s2", change: "broke" },
      { task_id: "s3", change: "broke" }
    ])
    expect(record.comparison.mcnemar_p).toBeCloseTo(0.25, 6)
    expect(answer.json.regressions.map((regression: { run_id: string }) => regression.run_id)).toEqual([third.id])

    // One email, to the run's notify addresses, naming the entry as the cause and listing the tasks not CORRECT.
    const [mail] = await eventually(() => Promise.resolve(smtp.messages), (messages) => messages.length > 0, "the regression's email")
    expect(smtp.messages).toHaveLength(1)
    expect(mail!.to).toEqual(["data-team@example.com", "lead@example.com"])
    expect(mail!.from).toBe("evals@example.com")
    const text = quotedPrintable(mail!.raw)
    expect(text.replace(/\r?\n /g, " ")).toMatch(/Subject: Evaluation regression: sevens@[0-9a-f]{40} dropped 30 points/)
    expect(text).toContain(`The knowledge entry ${entry.json.id} caused this regression: it was added after the last comparable run (${second.id}), and nothing else changed.`)
    expect(text).toContain("Tasks that broke: s1, s2, s3.")
    expect(text).toMatch(/Tasks whose verdict was not CORRECT:\r?\n {2}- s1: WRONG\r?\n {2}- s2: WRONG\r?\n {2}- s3: WRONG/)
    expect(text).not.toContain("s3cret-smtp-pass")
  }, 240_000)

  it("attempts each task as many times as asked: each attempt graded and kept on its own, the record weighing them together", async () => {
    const refused = await request(gateway.url, "/api/evals/runs", { key: admin, body: { attempts: 6 } })
    expect([refused.status, refused.json.message]).toEqual([400, expect.stringContaining("attempts must be between 1 and 5")])
    wrong = new Set()
    flaky = new Set(["s9"])
    asked.clear()
    const run = await runToEnd({ attempts: 2 })
    expect(run.total).toBe(2 * TASKS)
    expect(run.settings.attempts).toBe(2)
    expect(run.tasks.map((task: { task_id: string }) => task.task_id)).toEqual([...Array.from({ length: TASKS }, (_, i) => `s${i}`), ...Array.from({ length: TASKS }, (_, i) => `s${i}~2`)])
    expect(run.tasks.find((task: { task_id: string }) => task.task_id === "s9~2")).toMatchObject({ attempt: 2, phase: "done" })
    expect(run.tasks.filter((task: { verdict: string }) => task.verdict !== "CORRECT").map((task: { task_id: string }) => task.task_id)).toHaveLength(1)
    expect(run.accuracy).toBeCloseTo(19 / 20, 6)
    const transcript = await request(gateway.url, `/api/evals/runs/${run.id}/tasks/s9~2/transcript`, { key: admin })
    expect(transcript.status, transcript.text).toBe(200)

    const record = (await history()).json.items[0]
    expect(record).toMatchObject({ run_id: run.id, attempts: 2, changes: [{ kind: "attempts", detail: "1 → 2 per task" }] })
    expect(record.tasks.find((task: { task_id: string }) => task.task_id === "s9")).toEqual({ task_id: "s9", attempts: 2, correct: 1, verdict: "WRONG" })
    expect(record.tasks.find((task: { task_id: string }) => task.task_id === "s0")).toEqual({ task_id: "s0", attempts: 2, correct: 2, verdict: "CORRECT" })
  }, 240_000)

  it("compares only runs of the same tasks: a run of some of them is no comparison, nor anyone's baseline (attack 42 F1)", async () => {
    flaky = new Set()
    wrong = new Set(["s9"])
    const subset = await runToEnd({ task_ids: ["s9"] })
    expect(subset.accuracy).toBe(0)
    let records = (await history()).json.items
    expect(records[0]).toMatchObject({ run_id: subset.id, comparison: null, regressed: false })
    wrong = new Set()
    const full = await runToEnd({ attempts: 2 })
    records = (await history()).json.items
    expect(records[0].run_id).toBe(full.id)
    expect(records[0].comparison.baseline_run_ids).not.toContain(subset.id)
    expect(smtp.messages).toHaveLength(1)
  }, 240_000)

  it("pages the history and refuses a cursor it did not give out", async () => {
    const page = await request(gateway.url, "/api/evals/accuracy?limit=1", { key: admin })
    expect(page.status).toBe(200)
    expect(page.json.items).toHaveLength(1)
    const next = await request(gateway.url, `/api/evals/accuracy?limit=1&cursor=${page.json.next_cursor}`, { key: admin })
    expect(next.json.items[0].run_id).not.toBe(page.json.items[0].run_id)
    const bad = await request(gateway.url, "/api/evals/accuracy?cursor=nonsense", { key: admin })
    expect(bad.status).toBe(400)
    expect(bad.json.code).toBe("invalid_request")
    // A time JavaScript reads but the store does not (attack 42 F3): refused as any other forged cursor.
    for (const time of ["2024-02-30T00:00:00Z", "0000-01-01T00:00:00Z", "2024-13-01T00:00:00Z"]) {
      const cursor = Buffer.from(JSON.stringify([time, "x"])).toString("base64url")
      for (const route of ["/api/evals/accuracy", "/api/evals/runs"]) {
        const forged = await request(gateway.url, `${route}?cursor=${cursor}`, { key: admin })
        expect([forged.status, forged.json.code], `${route} ${time}`).toEqual([400, "invalid_request"])
      }
    }
  })
})
