import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ModelReply, type ModelRequest, startModelFake } from "../fakes/ModelFake"
import { evalSetUp } from "../support/EvalSet"
import { eventually } from "../support/Eventually"
import { git } from "../support/Git"
import { request } from "../support/Http"
import { followSse } from "../support/Sse"
import { startGitRemote } from "../support/GitRemote"
import { Effect, Layer } from "effect"
import { LOCAL_ORG, LOCAL_USER, UserId } from "../../src/domain/Ids"
import { AgentRunsRepo } from "../../src/repos/AgentRunsRepo"
import { AuditRepo } from "../../src/repos/AuditRepo"
import { ApiKeys } from "../../src/services/ApiKeys"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { CLOUD_ENCRYPTION, type Gateway, localKey, tempDataDir } from "../support/Gateway"
import { startApp, startCloudEvalStaff, startInProcess } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())
const sandboxesHere = fs.existsSync("/usr/bin/bwrap") && fs.existsSync("/usr/bin/python3")
const execFileAsync = promisify(execFile)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const WIDE_SQL = "select g, '<' || g || '>' as label from generate_series(1, 500) g"
const TOP_SQL = "select customer_id, count(*) as orders from orders group by customer_id order by customer_id"

/** The eval set the runs grade: answers right, off by rounding, listing several numbers, wrong; a table from the agent's last query; a write task. */
const MANIFEST = (extra = "") => `name: shop_evals
${extra}
defaults:
  timeout_seconds: 60
tasks:
  - id: revenue
    class: read
    prompt: "TASK revenue: what is the total of all orders?"
    covers: [orders]
    checks: [{ name: total, type: number, gold: 9030 }]
  - id: third
    class: read
    prompt: "TASK third: what is a third of 100?"
    covers: [orders]
    checks: [{ name: third, type: number, gold: 33.333333 }]
  - id: many
    class: read
    prompt: "TASK many: how many orders are there?"
    covers: [orders]
    checks: [{ name: count, type: number, gold: 42 }]
  - id: wrong
    class: read
    prompt: "TASK wrong: how many orders are there?"
    covers: [orders]
    checks: [{ name: count, type: number, gold: 42 }]
  - id: top
    class: read
    prompt: "TASK top: orders per customer?"
    covers: [orders, customers]
    checks:
      - { name: per_customer, type: table, gold_sql: "${TOP_SQL}", row_order: ignore }
  - id: escape
    class: read
    prompt: "TASK escape: what does the other connection hold?"
    checks: [{ name: secret, type: number, gold: 424242 }]
  - id: build
    class: write
    prompt: "TASK build: build customer_orders"
    setup: setup/targets.sql
    builds: [customer_orders]
    capture: sample
    checks:
      - { name: built, type: exists, model: customer_orders }
      - { name: one_per_customer, type: grain, model: customer_orders, columns: [customer_id] }
      - { name: rows, type: row_count, model: customer_orders, equals: 2 }
      - { name: shape, type: columns, model: customer_orders, required: [customer_id, orders, revenue, goal] }
      - { name: revenue, type: sum, model: customer_orders, column: revenue, gold: 9030 }
  - id: sloppy
    class: write
    prompt: "TASK sloppy: build customer_orders"
    checks:
      - { name: built, type: exists, model: public.customer_orders }
      - { name: one_per_customer, type: grain, model: customer_orders, columns: [customer_id] }
`
/** The build task's setup, run in its branch before the agent: a table the warehouse does not have. */
const TARGETS_SQL = "create table targets (customer_id int primary key, goal numeric); insert into targets values (1, 5000), (2, 5000);"
const BUILD_SQL = `create table customer_orders as
  select o.customer_id, count(*) as orders, sum(o.total) as revenue, t.goal from orders o join targets t using (customer_id) group by o.customer_id, t.goal`

const ANSWERS: Record<string, string> = {
  revenue: "All orders together come to $9,030.00.",
  third: "A third of 100 is about 33.33.",
  many: "There are 40, 42 or 44 orders, depending on how you count.",
  wrong: "There are 41 orders."
}

describe.skipIf(skip)("evaluation runs: tasks graded end to end with the built-in agent (issue 31)", () => {
  let gateway: Gateway
  let admin: string
  let database: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let repo: string
  let work: string
  let projectId: string
  /** Model turns wait on this while it is set (to hold runs in flight). */
  let hold: Promise<void> | null = null
  let askOffered = false
  let branchOffered = false
  const dataDir = tempDataDir()
  const evidence = (runId: string, file: string) => path.join(dataDir, "objects/objects/evals/local", runId, file)

  const script = async (req: ModelRequest): Promise<ModelReply> => {
    if (hold !== null) await hold
    const task = /TASK (\w+)/.exec(req.raw)?.[1] ?? ""
    if (task === "ask") {
      askOffered ||= req.tools.includes("ask_user")
      if (req.toolResults.length === 0) return { toolCalls: [{ name: "ask_user", args: { question: "Which orders?" } }] }
      return { text: "There are 42 orders." }
    }
    if (task === "inf") return { text: "| x |\n|---|\n| Infinity |" }
    if (task === "wide" || task === "over") {
      if (req.toolResults.length === 0) return { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: WIDE_SQL } }] }
      return { text: "Done." }
    }
    if (task === "escape") {
      // A steered agent reaching past the pinned connection: its key opens no other.
      if (req.toolResults.length === 0) return { toolCalls: [{ name: "query_database", args: { connection_name: "other", sql: "select 424242 as secret" } }] }
      return { text: `The other connection says: ${req.toolResults[0]!.text}` }
    }
    if (task === "build" || task === "sloppy") {
      // The built task's model, a statement the warehouse itself would refuse (it runs in the task's branch), and a reach out of the branch.
      const steps = task === "build"
        ? [BUILD_SQL, "drop table orders", "create extension dblink", "select repeat('x', 100000000) as v", "select repeat('x', 20000)::int", "set work_mem = '1000GB'"]
        : ["create table customer_orders as select customer_id, total from orders"]
      const step = req.toolResults.length
      if (step < steps.length) return { toolCalls: [{ name: "branch_sql", args: { sql: steps[step]! } }] }
      branchOffered ||= req.tools.includes("branch_sql")
      return { text: "Built customer_orders." }
    }
    if (task === "top") {
      if (req.toolResults.length === 0) return { toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: TOP_SQL } }] }
      return { text: "Here are the orders per customer." }
    }
    return { text: ANSWERS[task] ?? "I do not know." }
  }

  const pushSet = async (manifest: string) => {
    fs.mkdirSync(path.join(repo, "evals"), { recursive: true })
    fs.writeFileSync(path.join(repo, "evals/eval.yaml"), manifest)
    fs.mkdirSync(path.join(repo, "evals/setup"), { recursive: true })
    fs.writeFileSync(path.join(repo, "evals/setup/targets.sql"), TARGETS_SQL)
    fs.writeFileSync(path.join(repo, "evals/setup/broken.sql"), "create table staged (x int); insert into nowhere values (1);")
    fs.writeFileSync(path.join(repo, "evals/setup/make.py"), "print('made')")
    fs.writeFileSync(path.join(repo, "evals/setup/prepare.py"), "import sluice\nr = sluice.query('select count(*) as n from orders')\nprint('prepared', r.rows)")
    fs.writeFileSync(path.join(repo, "evals/setup/hungry.py"), "b = bytearray(1024 * 1024 * 1024)\nprint('fed')")
    fs.writeFileSync(path.join(repo, "evals/setup/clean.py"), "print('cleaned')")
    fs.writeFileSync(path.join(repo, "evals/setup/paced.py"), "import time\nprint('loading', flush=True)\ntime.sleep(3)\nprint('loaded')")
    fs.writeFileSync(path.join(repo, "evals/setup/forge.py"), "raise Exception('the sandbox was killed: it went over its memory limit of 256 MiB')")
    fs.writeFileSync(
      path.join(repo, "evals/setup/framed.py"),
      "import json, os, struct\nd = json.dumps({'failed': 'MemoryError: the sandbox was killed: it went over its memory limit of 256 MiB'}).encode()\nos.write(4, struct.pack('>I', len(d)) + d)\n"
    )
    fs.writeFileSync(path.join(repo, "evals/setup/notes.txt"), "not a script")
    fs.writeFileSync(path.join(repo, "evals/setup/slow.sql"), "select pg_sleep(60)")
    await git(["add", "-A"], repo)
    await git(["commit", "-q", "-m", "set"], repo)
    const pushed = await git(["push", "-q", "origin", "HEAD:main"], repo)
    expect(pushed.code, pushed.stderr).toBe(0)
  }
  const configure = (body: object) => request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body })
  const start = (body: object = {}) => request(gateway.url, "/api/evals/runs", { key: admin, body })
  const runOf = (id: string) => request(gateway.url, `/api/evals/runs/${id}`, { key: admin }).then((r) => r.json)
  const ended = async (id: string, ms = 60_000) => {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      const run = await runOf(id)
      if (["completed", "failed", "cancelled"].includes(run.status)) return run
      await sleep(200)
    }
    throw new Error(`run ${id} is still ${JSON.stringify(await runOf(id))}`)
  }

  beforeAll(async () => {
    database = await createTestDatabase()
    await database.query(`create table customers (id int primary key, name text);
      insert into customers values (1, 'Ada'), (2, 'Grace');
      create table orders (id int primary key, customer_id int references customers, total numeric);
      insert into orders select g, 1 + g % 2, g * 10 from generate_series(1, 42) g;`)
    fake = await startModelFake((req) => script(req))
    gateway = await startApp({
      dataDir,
      env: { SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000", SP_LLM_PROVIDER: "anthropic", SP_LLM_BASE_URL: fake.url, SP_LLM_API_KEY: "sk-ant-test-evals", SP_LLM_MODEL: "claude-sonnet-4-5", SP_EVAL_MEMORY_LIMIT: "256" }
    })
    admin = (await request(gateway.url, "/api/keys", { key: await localKey(gateway), body: { name: "staff", scopes: ["read", "query", "write", "admin"] } })).json.key
    const connection = { name: "shop", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    expect((await request(gateway.url, "/api/connections", { key: admin, body: { ...connection, name: "other", database: "postgres" } })).status).toBe(201)
    projectId = (await request(gateway.url, "/api/workspace-projects", { key: admin, body: { name: "evals" } })).json.id
    work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-evalruns-"))
    const remote = `${gateway.url.replace("http://", `http://git:${admin}@`)}/git/${projectId}.git`
    expect((await git(["clone", "-q", remote, "repo"], work)).code).toBe(0)
    repo = path.join(work, "repo")
    await pushSet(MANIFEST())
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await fake?.close()
    await database?.drop()
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true })
  })

  it("refuses a start the settings cannot carry, each with its own message, and starts nothing", async () => {
    const cases: Array<[object, RegExp]> = [[{}, /No runner profile is set/]]
    for (const [body, message] of cases) {
      const answer = await start(body)
      expect(answer.status, answer.text).toBe(400)
      expect(answer.json.message).toMatch(message)
    }
    expect((await configure({ runner_profile: "python-sandbox" })).status).toBe(200)
    expect((await start()).json.message).toMatch(/No eval repository is set/)
    expect((await configure({ eval_set: { kind: "repository", workspace_project_id: projectId, path: "evals", ref: null } })).status).toBe(200)
    expect((await start()).json.message).toMatch(/No connection is pinned/)
    expect((await start({ connection_name: "nowhere" })).json.message).toMatch(/The pinned connection nowhere does not exist/)
    expect((await configure({ connection_name: "shop" })).status).toBe(200)
    const caps: Array<[object, RegExp]> = [
      [{ max_tasks: 201 }, /max_tasks must be between 1 and 200/],
      [{ prompt_preamble: "x".repeat(4001) }, /prompt_preamble must be at most 4000 characters/],
      [{ notify_emails: Array.from({ length: 21 }, (_, i) => `a${i}@example.com`) }, /notify_emails holds at most 20 addresses/],
      [{ doc_ids: Array.from({ length: 21 }, (_, i) => `doc_${i}`) }, /doc_ids lists at most 20/],
      [{ task_ids: Array.from({ length: 201 }, (_, i) => `t${i}`) }, /task_ids lists at most 200 tasks/],
      [{ connection_name: "no spaces" }, /connection_name/],
      [{ task_ids: ["revenue", "nonesuch"] }, /has no task nonesuch/],
      [{ image: "evil:latest" }, /image/]
    ]
    for (const [body, message] of caps) {
      const answer = await start(body)
      expect(answer.status, `${JSON.stringify(body).slice(0, 80)}: ${answer.text}`).toBe(400)
      expect(answer.json.message).toMatch(message)
    }
    expect((await request(gateway.url, "/api/evals/runs", { key: admin })).json.items).toEqual([])
  })

  it("runs read and write tasks to their verdicts, keeps the evidence, and regrades it to the same verdicts", async () => {
    const started = await start()
    expect(started.status, started.text).toBe(202)
    expect(started.json).toMatchObject({ status: "queued", total: 8, eval_set_ref: expect.stringMatching(/^shop_evals@[0-9a-f]{40}$/), build_fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) })
    const run = await ended(started.json.id)
    expect(run.status, JSON.stringify(run.error)).toBe("completed")
    const verdicts = Object.fromEntries(run.tasks.map((t: any) => [t.task_id, t.verdict]))
    const details = Object.fromEntries(run.tasks.map((t: any) => [t.task_id, t.detail]))
    expect(verdicts, JSON.stringify(details)).toEqual({ revenue: "CORRECT", third: "CORRECT", many: "WRONG", wrong: "WRONG", top: "CORRECT", escape: "WRONG", build: "CORRECT", sloppy: "PARTIAL" })
    expect(run).toMatchObject({ done: 8, verdicts: { CORRECT: 4, PARTIAL: 1, WRONG: 3, ERROR: 0, UNGRADED: 0 }, accuracy: 4 / 8 })
    expect(run.tasks.find((t: any) => t.task_id === "sloppy").checks.find((c: any) => c.name === "one_per_customer").detail).toMatch(/rows share a key/)
    // A write task's agent writes in its branch alone (offered branch_sql; read tasks are not), set up by the task's SQL; the warehouse is untouched.
    expect(branchOffered).toBe(true)
    const built = fs.readFileSync(evidence(run.id, "tasks/task_build/transcript.json"), "utf8")
    expect(built).toMatch(/SELECT done: 2 rows/)
    expect(built).toMatch(/DROP TABLE done/)
    expect(built).toMatch(/Refused in the branch: [^"]*extension/i)
    // What the branch returns is read within a budget, never whole (a 100 MB value; attack 38 F1), its errors are cut short (F2), and the session's limits are its own (F3).
    const results = JSON.parse(built).events.filter((e: any) => e.type === "tool_call").map((e: any) => e.data.result as string)
    expect(results[3]).toMatch(/^invalid_request: The statement's result is larger than 16 MB/)
    expect(results[4]).toMatch(/^invalid_request: The branch refused the statement: invalid input syntax for type integer: "x+…/)
    expect(results[4]!.length).toBeLessThan(1_200)
    expect(results[5]).toMatch(/^invalid_request: Refused in the branch: SET work_mem is not allowed/)
    expect(fs.readFileSync(evidence(run.id, "tasks/task_build/setup.log"), "utf8")).toMatch(/setup\/targets\.sql: INSERT done \(2 rows\)/)
    // What the built models held is kept with the evidence: a sample of their rows where the task asks for one, else their fingerprint alone.
    const captures = (task: string) => JSON.parse(fs.readFileSync(evidence(run.id, `tasks/task_${task}/captures.json`), "utf8"))
    expect(captures("build")).toMatchObject({ mode: "sample", models: { customer_orders: { exists: true, row_count: 2 } }, rows: { customer_orders: { columns: ["customer_id", "orders", "revenue", "goal"], truncated: false } } })
    expect(captures("build").rows.customer_orders.rows).toHaveLength(2)
    expect(captures("sloppy")).toMatchObject({ mode: "fingerprint", models: { customer_orders: { exists: true, row_count: 42 } }, rows: {} })
    expect(await database.query("select count(*)::int as n from orders")).toEqual([{ n: 42 }])
    expect(await database.query("select to_regclass('customer_orders') as t, to_regclass('targets') as u")).toEqual([{ t: null, u: null }])
    // Every branch the run made (its copy of the warehouse, each write task's) is gone with it, just after its row says it ended (a record goes once its database is dropped).
    const branches = () => request(gateway.url, "/api/connections/shop/dbbranch/projects/evals/branches", { key: admin }).then((r) => r.json.items as Array<unknown>)
    await eventually(branches, (items) => items.length === 0, "the run's branches deleted")
    // The task's key is limited to the pinned connection: the other one does not exist for it.
    const escape = fs.readFileSync(evidence(run.id, "tasks/task_escape/transcript.json"), "utf8")
    expect(escape).toMatch(/No connection named \\"other\\"/)
    expect(escape).not.toContain("424242 |")
    expect(run.tasks.every((t: any) => t.phase === "done")).toBe(true)
    // The evidence is in the object store: each graded task's, the agent's transcript (no secret in it), and run.json.
    const stored = JSON.parse(fs.readFileSync(evidence(run.id, "tasks/task_top/evidence.json"), "utf8"))
    expect(stored.evidence.last_result).toEqual({ columns: ["customer_id", "orders"], rows: [[1, "21"], [2, "21"]] })
    expect(stored.evidence.gold_tables.per_customer).toEqual({ columns: ["customer_id", "orders"], rows: [[1, "21"], [2, "21"]] })
    const transcript = fs.readFileSync(evidence(run.id, "tasks/task_top/transcript.json"), "utf8")
    expect(transcript).toContain("query_database")
    expect(transcript).not.toContain("sk-ant-test-evals")
    expect(fs.existsSync(evidence(run.id, "tasks/task_build/evidence.json"))).toBe(true)
    // run.json is written as the run ends, just after its row says so.
    await eventually(async () => fs.existsSync(evidence(run.id, "run.json")), Boolean, "run.json written")
    expect(JSON.parse(fs.readFileSync(evidence(run.id, "run.json"), "utf8")).run).toMatchObject({ id: run.id, status: "completed", accuracy: 4 / 8 })
    // Every task's key is revoked: none is left among the organization's keys.
    const keys = (await request(gateway.url, "/api/keys", { key: admin })).json.items as Array<{ name: string }>
    expect(keys.filter((k) => k.name.startsWith("eval "))).toEqual([])
    // The gold SQL is audited as eval_query, so no agent's query_history (which lists the organization's queries) shows it.
    const auditedAs = async (type: string) => (await request(gateway.url, `/api/audit?event_type=${type}&limit=200`, { key: admin })).json.items as Array<any>
    expect((await auditedAs("eval_query")).some((e) => e.details?.parent?.task_id === "top" && e.sql?.includes("group by customer_id"))).toBe(true)
    expect((await auditedAs("query")).some((e) => e.details?.parent?.event_type === "eval_query")).toBe(false)
    // A write task's setup SQL is on the audit log as the task's key ran it in its branch, its literals redacted (attack 38 F5).
    const setupRow = (await auditedAs("eval_script")).find((e) => e.details?.task_id === "build")
    expect(setupRow).toMatchObject({ outcome: "success", connection: "shop", details: { phase: "setup", script: "setup/targets.sql", branch: expect.stringMatching(/^eval-[0-9a-f]{32}-\d{3}$/) } })
    expect(setupRow.sql).toMatch(/insert into targets values/)
    expect(setupRow.sql).not.toContain("5000")
    const progress = await request(gateway.url, `/api/evals/runs/${run.id}/progress`, { key: admin })
    expect(progress.json).toMatchObject({ run_id: run.id, status: "completed", done: 8, total: 8, active: [] })
    const regraded = await request(gateway.url, `/api/evals/runs/${run.id}/regrade`, { key: admin, method: "POST" })
    expect(regraded.status, regraded.text).toBe(200)
    expect(regraded.json.tasks.map((t: any) => [t.task_id, t.verdict, t.checks])).toEqual(run.tasks.map((t: any) => [t.task_id, t.verdict, t.checks]))
    expect(regraded.json.accuracy).toBe(4 / 8)
  }, 90_000)

  it("serves a run's evidence: transcripts, files, and the whole run as a streamed zip that stops before 256 MB", async () => {
    const run = (await request(gateway.url, "/api/evals/runs", { key: admin })).json.items.find((r: any) => r.total === 8)
    const transcript = await request(gateway.url, `/api/evals/runs/${run.id}/tasks/top/transcript`, { key: admin })
    expect(transcript.status, transcript.text).toBe(200)
    expect(transcript.headers["content-type"]).toMatch(/application\/json/)
    expect(transcript.json.events.some((e: any) => e.type === "tool_call" && e.data.tool === "query_database")).toBe(true)
    const reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "staff reader", scopes: ["read"] } })).json.key
    expect((await request(gateway.url, `/api/evals/runs/${run.id}/tasks/top/transcript`, { key: reader })).status).toBe(403)
    const noLog = await request(gateway.url, `/api/evals/runs/${run.id}/tasks/top/setup/setup/log`, { key: admin })
    expect(noLog.status).toBe(404)
    expect(noLog.json.message).toMatch(/has no setup\.log/)
    expect((await request(gateway.url, `/api/evals/runs/${run.id}/tasks/nonesuch/transcript`, { key: admin })).status).toBe(404)
    const listed = await request(gateway.url, `/api/evals/runs/${run.id}/artifacts`, { key: admin })
    expect(listed.json.items.map((i: any) => i.path)).toEqual(expect.arrayContaining(["run.json", "tasks/task_top/evidence.json", "tasks/task_top/transcript.json"]))
    const file = await request(gateway.url, `/api/evals/runs/${run.id}/artifacts/top/evidence.json`, { key: admin })
    expect(file.json.evidence.answer).toBe("Here are the orders per customer.")
    expect((await request(gateway.url, `/api/evals/runs/${run.id}/artifacts/top/..%2F..%2Frun.json`, { key: admin })).status).toBe(400)

    const exported = path.join(work, "export.zip")
    const download = async () => {
      const response = await fetch(`${gateway.url}/api/evals/runs/${run.id}/export`, { headers: { authorization: `Bearer ${admin}` } })
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("application/zip")
      fs.writeFileSync(exported, Buffer.from(await response.arrayBuffer()))
      const listing = await execFileAsync("unzip", ["-l", exported])
      return listing.stdout
    }
    const whole = await download()
    expect(whole).toMatch(/ run\.json\n/)
    expect(whole).toContain("tasks/task_top/transcript.json")
    expect(whole).not.toContain("TRUNCATED.txt")
    // A run whose evidence outgrows the cap: the zip stops at the file of 257 MB (sparse on disk); it and every file after it are named in TRUNCATED.txt.
    const big = evidence(run.id, "tasks/task_revenue/transcript.json")
    fs.truncateSync(big, 257 * 1024 * 1024)
    const capped = await download()
    expect(capped).toContain("TRUNCATED.txt")
    expect(capped).not.toContain("tasks/task_revenue/transcript.json")
    expect(capped).not.toContain("tasks/task_top/transcript.json")
    expect(capped).toContain("tasks/task_many/transcript.json")
    const truncated = await execFileAsync("unzip", ["-p", exported, "TRUNCATED.txt"])
    expect(truncated.stdout).toMatch(/stopped before 256 MB: \d+ file\(s\)[\s\S]*tasks\/task_revenue\/transcript\.json[\s\S]*tasks\/task_top\/transcript\.json/)
    fs.rmSync(exported)
  }, 60_000)

  it("refuses a warehouse whose build fingerprint differs from the set's, and runs one that matches", async () => {
    const previous = (await request(gateway.url, "/api/evals/runs", { key: admin })).json.items[0]
    await pushSet(MANIFEST(`build_fingerprint: sha256:${"0".repeat(64)}`))
    const refused = await start()
    expect(refused.status).toBe(400)
    expect(refused.json.message).toMatch(new RegExp(`does not match the eval set's build fingerprint.*${previous.build_fingerprint}`))
    await pushSet(MANIFEST(`build_fingerprint: ${previous.build_fingerprint}`))
    const matched = await start({ task_ids: ["revenue"] })
    expect(matched.status, matched.text).toBe(202)
    expect((await ended(matched.json.id)).tasks.map((t: any) => t.verdict)).toEqual(["CORRECT"])
  }, 60_000)

  it("refuses a third run in flight on one process with 409", async () => {
    let release = () => {}
    hold = new Promise((resolve) => (release = resolve))
    try {
      const first = await start({ task_ids: ["revenue"] })
      const second = await start({ task_ids: ["third"] })
      expect([first.status, second.status]).toEqual([202, 202])
      const third = await start({ task_ids: ["many"] })
      expect(third.status).toBe(409)
      expect(third.json).toEqual({ code: "conflict", message: "Too many eval runs in flight" })
      const progress = await request(gateway.url, `/api/evals/runs/${first.json.id}/progress`, { key: admin })
      expect(progress.json).toMatchObject({ done: 0, total: 1 })
      // A task key an earlier try made but could not record (a store outage between the two) goes with its run all the same (attack 37 F10).
      const orphan = await request(gateway.url, "/api/keys", { key: admin, body: { name: `eval ${first.json.id} task 007`, scopes: ["read"] } })
      expect(orphan.status).toBe(201)
      release()
      hold = null
      await ended(first.json.id)
      await ended(second.json.id)
      // Revoked as the run ends, just after its row says so.
      const names = async () => ((await request(gateway.url, "/api/keys", { key: admin })).json.items as Array<{ name: string }>).map((k) => k.name)
      await eventually(names, (all) => !all.some((name) => name.startsWith(`eval ${first.json.id}`)), "the run's keys revoked")
      expect((await start({ task_ids: ["many"] })).status).toBe(202)
    } finally {
      hold = null
      release()
    }
  }, 90_000)

  it("grades what it stores: tasks whose ids share a long prefix each get a key, a gold value JSON cannot hold is graded as stored, the last result is read whole", async () => {
    const long = "x".repeat(60)
    await pushSet(`name: edge
tasks:
  - { id: ${long}_a, class: read, prompt: "TASK revenue: total?", checks: [{ name: total, type: number, gold: 9030 }] }
  - { id: ${long}_b, class: read, prompt: "TASK revenue: total?", checks: [{ name: total, type: number, gold: 9030 }] }
  - { id: inf, class: read, prompt: "TASK inf: infinity?", checks: [{ name: t, type: table, gold_sql: "select 'Infinity'::float8 as x", source: answer }] }
  - { id: wide, class: read, prompt: "TASK wide: labels?", checks: [{ name: t, type: table, gold_sql: "${WIDE_SQL}" }] }
  - { id: over, class: read, prompt: "TASK over: labels?", checks: [{ name: t, type: table, gold_sql: "${WIDE_SQL} limit 59" }] }
  - { id: ask, class: read, prompt: "TASK ask: how many orders?", checks: [{ name: n, type: number, gold: 42 }] }
  - { id: broken, class: write, prompt: "TASK build: build it", setup: setup/broken.sql, checks: [{ name: b, type: exists, model: customer_orders }] }
  - { id: script, class: write, prompt: "TASK build: build it", setup: setup/notes.txt, checks: [{ name: b, type: exists, model: customer_orders }] }
  - { id: slow, class: write, prompt: "TASK build: build it", setup: setup/slow.sql, timeout_seconds: 10, checks: [{ name: b, type: exists, model: customer_orders }] }
`)
    const started = await start()
    expect(started.status, started.text).toBe(202)
    const run = await ended(started.json.id)
    // The agent's last result is its query's rows read whole, not the text the model was shown (cut at 400 rows, markup escaped): attack 37 F3.
    expect(run.tasks.map((t: any) => [t.task_id, t.verdict])).toEqual([
      [`${long}_a`, "CORRECT"],
      [`${long}_b`, "CORRECT"],
      ["inf", "CORRECT"],
      ["wide", "CORRECT"],
      ["over", "WRONG"],
      ["ask", "ERROR"],
      ["broken", "ERROR"],
      ["script", "ERROR"],
      ["slow", "ERROR"]
    ])
    // A write task's SQL setup that fails is its ERROR, said with the server's words (and kept in setup.log); a script needs a sandbox, not built yet.
    const detail = (id: string) => run.tasks.find((t: any) => t.task_id === id).detail
    expect(detail("broken")).toMatch(/The task's setup setup\/broken\.sql failed: .*relation "nowhere" does not exist/)
    expect(fs.readFileSync(evidence(run.id, "tasks/task_broken/setup.log"), "utf8")).toMatch(/nowhere/)
    // A setup runs within its task's time (attack 38 F4): the whole run took well under the minute it sleeps.
    expect(detail("slow")).toMatch(/The task's setup setup\/slow\.sql failed: .*statement timeout/)
    expect(new Date(run.ended_at).getTime() - new Date(run.created_at).getTime()).toBeLessThan(30_000)
    expect(detail("script")).toMatch(/scripts are Python \(\.py\), or SQL \(\.sql\) for a write task.*the task was not attempted/)
    // No one answers an evaluation's agent: it is not offered ask_user, and a model that calls it anyway fails its task, never waits for a person (attack 37 F6).
    expect(askOffered).toBe(false)
    expect(run.tasks.find((t: any) => t.task_id === "ask").detail).toMatch(/The agent's run failed/)
    const regraded = await request(gateway.url, `/api/evals/runs/${run.id}/regrade`, { key: admin, method: "POST" })
    expect(regraded.json.tasks.map((t: any) => [t.task_id, t.verdict, t.checks])).toEqual(run.tasks.map((t: any) => [t.task_id, t.verdict, t.checks]))
  }, 60_000)

  it.skipIf(!sandboxesHere)("runs a task's Python setup and teardown in a sandbox of their own, as its key, within SP_EVAL_MEMORY_LIMIT: one over it is oom_killed", async () => {
    await pushSet(`name: scripts
tasks:
  - { id: scripted, class: read, prompt: "TASK revenue: total?", setup: setup/prepare.py, teardown: setup/clean.py, checks: [{ name: total, type: number, gold: 9030 }] }
  - { id: hungry, class: read, prompt: "TASK revenue: total?", setup: setup/hungry.py, checks: [{ name: total, type: number, gold: 9030 }] }
  - { id: forger, class: read, prompt: "TASK revenue: total?", setup: setup/forge.py, checks: [{ name: total, type: number, gold: 9030 }] }
  - { id: framer, class: read, prompt: "TASK revenue: total?", setup: setup/framed.py, checks: [{ name: total, type: number, gold: 9030 }] }
`)
    const started = await start()
    expect(started.status, started.text).toBe(202)
    const run = await ended(started.json.id)
    expect(run.tasks.map((t: any) => [t.task_id, t.verdict])).toEqual([
      ["scripted", "CORRECT"],
      ["hungry", "ERROR"],
      ["forger", "ERROR"],
      ["framer", "ERROR"]
    ])
    // Nor one that sends the runner's own failure message with those words (attack 40 F3).
    expect(run.tasks[3].detail).not.toMatch(/oom_killed/)
    // A script that only says it went over the limit failed, and was not killed for memory: no oom_killed (attack 39 F2).
    expect(run.tasks[2].detail).toMatch(/The task.s setup setup\/forge\.py failed: [\s\S]*Exception: the sandbox was killed/)
    expect(run.tasks[2].detail).not.toMatch(/oom_killed/)
    // The setup queried through the gate as the task's key (the pinned connection); the teardown ran after grading.
    const log = (task: string, phase: string) => request(gateway.url, `/api/evals/runs/${run.id}/tasks/${task}/setup/${phase}/log`, { key: admin }).then((r) => r.text)
    expect(await log("scripted", "setup")).toBe("prepared [['42']]\n")
    expect(await log("scripted", "teardown")).toBe("cleaned\n")
    expect(run.tasks[1].detail).toMatch(/The task's setup setup\/hungry\.py failed: oom_killed: it went over SP_EVAL_MEMORY_LIMIT \(256 MiB\)/)
    expect(await log("hungry", "setup")).toMatch(/memory/i)
    const events = (await request(gateway.url, `/api/evals/runs/${run.id}/events`, { key: admin })).json.items
    expect(events).toEqual([expect.objectContaining({ type: "oom_killed", data: { task_id: "hungry", phase: "setup", script: "setup/hungry.py", memory_limit_mb: 256 } })])
    // The live feed says so too, as a pod event of the script's sandbox; the forger's only exited.
    const podEvents = (task: string) => request(gateway.url, `/api/evals/sandboxes/eval-${run.id.replace(/^evr_/, "")}-${task}-setup/events`, { key: admin }).then((r) => r.json.items.map((e: any) => e.type))
    expect(await podEvents("hungry")).toEqual(["scheduled", "started", "oom_killed", "removed"])
    expect(await podEvents("forger")).toEqual(["scheduled", "started", "exited", "removed"])
    expect(await podEvents("framer")).toEqual(["scheduled", "started", "exited", "removed"])
    // Each script's sandbox is gone with it.
    expect((await request(gateway.url, "/api/sandboxes", { key: admin })).json.items.filter((s: any) => s.status !== "stopped")).toEqual([])
  }, 90_000)

  it("runs a set read from a git remote, pinned to the commit it started at", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-remote-run-"))
    const remote = await startGitRemote(root, "unused")
    try {
      const clone = path.join(root, "clone")
      expect((await git(["init", "-q", "--bare", path.join(root, "sets.git")], root)).code).toBe(0)
      expect((await git(["clone", "-q", path.join(root, "sets.git"), clone], root)).code).toBe(0)
      const manifest = (gold: number) => `name: remote_set\ntasks:\n  - { id: revenue, class: read, prompt: "TASK revenue: total?", checks: [{ name: total, type: number, gold: ${gold} }] }\n`
      fs.writeFileSync(path.join(clone, "eval.yaml"), manifest(9030))
      await git(["add", "-A"], clone)
      await git(["commit", "-q", "-m", "set"], clone)
      expect((await git(["push", "-q", "origin", "HEAD:main"], clone)).code).toBe(0)
      const commit = (await git(["rev-parse", "HEAD"], clone)).stdout.trim()
      expect((await configure({ eval_set: { kind: "remote", url: `${remote.url}/sets.git`, path: ".", ref: "main" } })).status).toBe(200)
      let release = () => {}
      hold = new Promise<void>((resolve) => (release = resolve))
      const started = await start()
      expect(started.status, started.text).toBe(202)
      expect(started.json.eval_set_ref).toBe(`remote_set@${commit}`)
      // Pushed while it runs: the run goes on with the commit it started at.
      fs.writeFileSync(path.join(clone, "eval.yaml"), manifest(1))
      await git(["commit", "-q", "-am", "changed"], clone)
      expect((await git(["push", "-q", "origin", "HEAD:main"], clone)).code).toBe(0)
      release()
      hold = null
      const run = await ended(started.json.id)
      expect(run.tasks.map((t: any) => [t.task_id, t.verdict])).toEqual([["revenue", "CORRECT"]])
    } finally {
      hold = null
      await configure({ eval_set: { kind: "repository", workspace_project_id: projectId, path: "evals", ref: null } })
      await remote.close()
      fs.rmSync(root, { recursive: true, force: true })
    }
  }, 60_000)

  it.skipIf(!sandboxesHere)("shows a script's sandbox live: listed while it runs, its log followed as it prints, its events, then its end", async () => {
    await pushSet(`name: live
tasks:
  - { id: paced, class: read, prompt: "TASK revenue: total?", setup: setup/paced.py, checks: [{ name: total, type: number, gold: 9030 }] }
`)
    const started = await start()
    expect(started.status, started.text).toBe(202)
    const runHex = started.json.id.replace(/^evr_/, "")
    const name = `eval-${runHex}-paced-setup`
    const listed = await eventually(
      async () => (await request(gateway.url, `/api/evals/sandboxes?run_id=${started.json.id}`, { key: admin })).json.items,
      (items: any[]) => items.some((s) => s.name === name && s.status === "running"),
      "the setup's sandbox running"
    )
    expect(listed.find((s: any) => s.name === name)).toMatchObject({ run_id: started.json.id, task_id: "paced", phase: "setup", script: "setup/paced.py", memory_limit_mb: 256, sandbox_id: expect.stringMatching(/^sbx_/) })
    const followed = followSse(gateway.url, `/api/evals/sandboxes/${name}/logs/stream`, admin)
    await eventually(async () => followed.events.filter((e) => e.event === "log").map((e) => e.data.text).join(""), (text) => text.includes("loading"), "the first line, live")
    // Heard while the script still sleeps: it has not exited.
    const meanwhile = (await request(gateway.url, `/api/evals/sandboxes/${name}/events`, { key: admin })).json.items.map((e: any) => e.type)
    expect(meanwhile).toEqual(["scheduled", "started"])
    expect((await followed.ended).broken).toBe(false)
    expect(followed.events.filter((e) => e.event === "log").map((e) => e.data.text).join("")).toBe("loading\nloaded\n")
    expect(followed.events.at(-1)).toMatchObject({ event: "end", data: { status: "ended", log: `/api/evals/runs/${started.json.id}/tasks/paced/setup/setup/log` } })
    const events = (await request(gateway.url, `/api/evals/sandboxes/${name}/events`, { key: admin })).json.items.map((e: any) => e.type)
    expect(events).toEqual(["scheduled", "started", "exited", "removed"])
    const run = await ended(started.json.id)
    expect(run.tasks.map((t: any) => [t.task_id, t.verdict])).toEqual([["paced", "CORRECT"]])
    expect((await request(gateway.url, `/api/evals/runs/${run.id}/tasks/paced/setup/setup/log`, { key: admin })).text).toBe("loading\nloaded\n")
  }, 90_000)
})

describe.skipIf(skip)("evaluation runs: doc_ids overlay knowledge proposals on the live base (issue 31)", () => {
  it("serves the run's agents the proposals it names as if approved, and no one else; refuses ids that are not entries", async () => {
    // The main suite's set-up, small: a set of one task whose answer only a proposal holds.
    const database = await createTestDatabase()
    const fake = await startModelFake(async (req) => {
      if (req.toolResults.length === 0) return { toolCalls: [{ name: "get_knowledge", args: { task_description: "how many loyalty members the shop has" } }] }
      const members = /(\d+) loyalty members/.exec(req.toolResults[0]!.text)?.[1]
      return { text: members === undefined ? "I do not know." : `There are ${members} loyalty members.` }
    })
    const dataDir = tempDataDir()
    const gateway = await startApp({ dataDir, env: { SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000", SP_LLM_PROVIDER: "anthropic", SP_LLM_BASE_URL: fake.url, SP_LLM_API_KEY: "sk-ant-test-overlay", SP_LLM_MODEL: "claude-sonnet-4-5" } })
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-evaloverlay-"))
    try {
      const admin = (await request(gateway.url, "/api/keys", { key: await localKey(gateway), body: { name: "staff", scopes: ["read", "query", "write", "admin"] } })).json.key
      await evalSetUp(gateway.url, admin, database.name, work, `name: overlay\ntasks:\n  - { id: know, class: read, prompt: "TASK know: how many loyalty members?", checks: [{ name: n, type: number, gold: 4242 }] }\n`)
      // A proposal (pending: an agent's, no person has approved it) that holds the answer.
      const proposed = await request(gateway.url, "/mcp", {
        key: admin,
        headers: { accept: "application/json, text/event-stream" },
        body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "propose_knowledge", arguments: { scope: "org", category: "context", title: "loyalty-members", body: "The shop has exactly 4242 loyalty members." } } }
      })
      const entryId = JSON.parse(proposed.json.result.content[0].text).id as string
      expect((await request(gateway.url, `/api/knowledge/${entryId}`, { key: admin })).json.status).toBe("pending")
      const runWith = async (body: object) => {
        const started = await request(gateway.url, "/api/evals/runs", { key: admin, body })
        expect(started.status, started.text).toBe(202)
        const deadline = Date.now() + 60_000
        for (;;) {
          const run = (await request(gateway.url, `/api/evals/runs/${started.json.id}`, { key: admin })).json
          if (["completed", "failed"].includes(run.status)) return run
          if (Date.now() > deadline) throw new Error(JSON.stringify(run))
          await sleep(200)
        }
      }
      // The live base alone: the proposal is not knowledge yet.
      expect((await runWith({})).tasks[0].verdict).toBe("WRONG")
      // Overlaid: the run's agent is served it; the base is unchanged for everyone else.
      const overlaid = await runWith({ doc_ids: [entryId] })
      expect([overlaid.tasks[0].verdict, overlaid.settings.doc_ids]).toEqual(["CORRECT", [entryId]])
      expect((await request(gateway.url, `/api/knowledge/${entryId}`, { key: admin })).json.status).toBe("pending")
      const unknown = await request(gateway.url, "/api/evals/runs", { key: admin, body: { doc_ids: ["kn_nonesuch"] } })
      expect([unknown.status, unknown.json.message]).toEqual([400, "doc_ids: there is no knowledge entry kn_nonesuch"])
    } finally {
      await gateway.stop()
      await fake.close()
      await database.drop()
      fs.rmSync(work, { recursive: true, force: true })
    }
  }, 120_000)
})

describe.skipIf(skip)("evaluation runs on a deployment without evidence storage (issue 31)", () => {
  it("refuses to start a run: there is nowhere to keep its evidence", async () => {
    const store = await createTestDatabase()
    const { gateway, admin } = await startCloudEvalStaff(store.url)
    try {
      expect((await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { runner_profile: "python-sandbox" } })).status).toBe(200)
      const refused = await request(gateway.url, "/api/evals/runs", { key: admin, body: {} })
      expect(refused.status).toBe(503)
      expect(refused.json).toEqual({ code: "unavailable", message: expect.stringMatching(/^Evidence storage is not configured: set SP_S3_BUCKET/) })
    } finally {
      await gateway.stop()
      await store.drop()
    }
  })
})

describe.skipIf(skip)("an evaluation task's agent run is its evaluation's (attack 37 F6, the rest)", () => {
  it("is not listed with the organization's agent runs, and no member but the evaluation's staff reads or cancels it", async () => {
    const store = await createTestDatabase()
    const gateway = await startInProcess({ SP_DEPLOYMENT_MODE: "cloud", DATABASE_URL: store.url, ...CLOUD_ENCRYPTION, SP_ADMIN_USER_IDS: LOCAL_USER, SP_EVAL_ALLOWED_ORGS: LOCAL_ORG })
    try {
      const other = UserId.make("usr_other_admin")
      const keyOf = (userId: UserId) =>
        gateway.runtime.runPromise(
          Effect.gen(function* () {
            yield* (yield* OrgsRepo).ensureMember({ orgId: LOCAL_ORG, orgName: "staff", userId, role: "admin" })
            const principal = { kind: "api_key", orgId: LOCAL_ORG, userId, keyId: null, keyPrefix: null, scopes: ["read", "query", "write", "admin"], role: "admin" } as const
            return (yield* (yield* ApiKeys).create(principal, { name: `key of ${userId}`, scopes: ["read", "query", "write", "admin"] })).key
          }).pipe(Effect.provide(Layer.merge(OrgsRepo.Default, ApiKeys.Default)))
        )
      const staff = await keyOf(LOCAL_USER)
      const member = await keyOf(other)
      // A task's agent run, as an eval run's task makes it, and an agent run of the organization's own.
      await gateway.runtime.runPromise(
        Effect.flatMap(AgentRunsRepo, (runs) =>
          Effect.forEach(
            [
              { id: "run_of_an_eval_task", eval_run_id: "evr_0" },
              { id: "run_of_a_member", eval_run_id: null }
            ],
            (run) =>
              runs.insert({ ...run, org_id: LOCAL_ORG, user_id: LOCAL_USER, principal_kind: "local", key_id: null, prompt: "TASK: how many?", connection_name: null, conversation_id: null, max_turns: 5, model: null, interactive: run.eval_run_id === null })
          )
        ).pipe(Effect.provide(AgentRunsRepo.Default))
      )
      const listed = (key: string) => request(gateway.url, "/api/agent-runs", { key }).then((r) => r.json.items.map((run: any) => run.id))
      expect(await listed(member)).toEqual(["run_of_a_member"])
      expect(await listed(staff)).toEqual(["run_of_a_member"])
      for (const path of ["/api/agent-runs/run_of_an_eval_task", "/api/agent-runs/run_of_an_eval_task/events"]) {
        const refused = await request(gateway.url, path, { key: member })
        expect([path, refused.status, refused.json.message]).toEqual([path, 404, "There is no agent run run_of_an_eval_task"])
        expect((await request(gateway.url, path, { key: staff })).status).toBe(200)
      }
      const cancel = await request(gateway.url, "/api/agent-runs/run_of_an_eval_task", { key: member, method: "PATCH", body: { action: "cancel" } })
      expect(cancel.status).toBe(404)
      expect((await request(gateway.url, "/api/agent-runs/run_of_an_eval_task", { key: staff })).json.status).toBe("queued")
      expect((await request(gateway.url, "/api/agent-runs/run_of_a_member", { key: member })).status).toBe(200)
      // Nor does a query of its agent lead back to it: the analysis trail is the audit log's alone, literals redacted (attack 39 F1).
      await gateway.runtime.runPromise(
        Effect.gen(function* () {
          yield* (yield* AgentRunsRepo).appendEvent(LOCAL_ORG, "run_of_an_eval_task", "tool/0/0", "tool_call", { tool: "query_database", sql: "select 4242 as secret_gold", query_ids: ["qry_eval"] })
          const row = { timestamp: Math.floor(Date.now() / 1000), org_id: LOCAL_ORG, principal: "key:sp_task", key_id: null, user_id: LOCAL_USER, event_type: "query", method: null, route: "/api/agent-runs/run_of_an_eval_task", status: null, connection: "shop", sql: "select ? as secret_gold", outcome: "success" as const, block_reason: null, rows: 1, duration_ms: 1, client_ip: null, user_agent: null, request_id: "req_eval", details: { query_id: "qry_eval", parent: { run_id: "run_of_an_eval_task", step: "0/0" } } }
          yield* (yield* AuditRepo).insertBatch([row])
        }).pipe(Effect.provide(Layer.merge(AgentRunsRepo.Default, AuditRepo.Default)))
      )
      const trail = (key: string) => request(gateway.url, "/api/analysis-trails/resolve?query_id=qry_eval", { key }).then((r) => r.json)
      expect(await trail(member)).toMatchObject({ run_id: null, sql: "select ? as secret_gold" })
      expect(await trail(staff)).toMatchObject({ run_id: "run_of_an_eval_task", sql: "select 4242 as secret_gold" })
    } finally {
      await gateway.stop()
      await store.drop()
    }
  })
})
