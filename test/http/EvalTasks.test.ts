import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { git } from "../support/Git"
import { request } from "../support/Http"
import { startInProcess } from "../support/InProcess"

const EXAMPLE = path.resolve(import.meta.dirname, "../../docs/eval-set-example")

describe("the eval set's tasks from a workspace project's repository (issue 31)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let admin: string
  let projectId: string
  let repo: string
  let work: string
  const branches = new Map<string, string>()

  /** Commits the example set under evals/jaffle on a new branch, changed by `edit`, and pushes it. */
  const pushBranch = async (branch: string, edit: (set: string) => void) => {
    expect((await git(["checkout", "-q", "-B", branch, "base"], repo)).code).toBe(0)
    const set = path.join(repo, "evals/jaffle")
    fs.rmSync(set, { recursive: true, force: true })
    fs.cpSync(EXAMPLE, set, { recursive: true })
    edit(set)
    expect((await git(["add", "-A"], repo)).code).toBe(0)
    expect((await git(["commit", "-q", "-m", branch], repo)).code).toBe(0)
    const pushed = await git(["push", "-q", "origin", branch], repo)
    expect(pushed.code, pushed.stderr).toBe(0)
    branches.set(branch, (await git(["rev-parse", "HEAD"], repo)).stdout.trim())
  }
  const useBranch = async (ref: string | null, folder = "evals/jaffle") => {
    const saved = await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { eval_set: { kind: "repository", workspace_project_id: projectId, path: folder, ref } } })
    expect(saved.status, saved.text).toBe(200)
    return request(gateway.url, "/api/evals/tasks", { key: admin })
  }

  beforeAll(async () => {
    gateway = await startInProcess({ SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000" })
    admin = await gateway.keyWith(["read", "write", "admin"])
    const made = await request(gateway.url, "/api/workspace-projects", { key: admin, body: { name: "evals" } })
    projectId = made.json.id as string
    work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-evalset-"))
    const remote = `${gateway.url.replace("http://", `http://git:${admin}@`)}/git/${projectId}.git`
    expect((await git(["clone", "-q", remote, "repo"], work)).code).toBe(0)
    repo = path.join(work, "repo")
    fs.writeFileSync(path.join(repo, "README.md"), "eval sets\n")
    await git(["add", "-A"], repo)
    await git(["commit", "-q", "-m", "base"], repo)
    await git(["branch", "base"], repo)
    await pushBranch("main", () => {})
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true })
  })

  it("refuses before a set is configured, then reads the pushed set at its commit", async () => {
    const none = await request(gateway.url, "/api/evals/tasks", { key: admin })
    expect(none.status).toBe(400)
    expect(none.json.message).toMatch(/No eval set is configured/)
    const answer = await useBranch(null)
    expect(answer.status, answer.text).toBe(200)
    expect(answer.json.ref).toBe(`jaffle_orders@${branches.get("main")}`)
    expect(answer.json.manifest.tasks.map((t: { id: string }) => t.id)).toEqual(["revenue_2018", "top_customers", "orders_daily"])
    expect(answer.json.source).toEqual({ kind: "repository", workspace_project_id: projectId, path: "evals/jaffle", ref: null })
  })

  it("says what is wrong with a set that cannot be used", async () => {
    const cases: Array<[string, (set: string) => void, RegExp]> = [
      ["link", (set) => fs.symlinkSync("/etc/passwd", path.join(set, "gold/passwd.csv")), /symbolic links or submodules.*gold\/passwd\.csv/],
      ["no-manifest", (set) => fs.rmSync(path.join(set, "eval.yaml")), /no eval\.yaml, eval\.yml, eval\.json at its top/],
      ["bad-yaml", (set) => fs.writeFileSync(path.join(set, "eval.yaml"), "name: [unclosed\n"), /^eval\.yaml: /],
      ["bad-task", (set) => fs.writeFileSync(path.join(set, "eval.yaml"), "name: s\ntasks:\n  - id: a\n    class: read\n    prompt: p\n    checks: [{name: n, type: number, gold: 1, image: x}]\n"), /eval\.yaml: .*image/],
      ["missing-file", (set) => fs.rmSync(path.join(set, "scripts/setup.sql")), /names files the set does not hold: scripts\/setup\.sql/],
      ["bad-csv", (set) => fs.writeFileSync(path.join(set, "gold/top_customers.csv"), "customer_id,number_of_orders\n51\n"), /gold\/top_customers\.csv: line 2: 1 fields, the header has 2/],
      ["json", (set) => fs.renameSync(path.join(set, "eval.yaml"), path.join(set, "eval.json")), /^eval\.json: /],
      // Attack 36 F2: a gold CSV of nothing but line ends took 3.3 GB to parse.
      ["csv-rows", (set) => fs.writeFileSync(path.join(set, "gold/top_customers.csv"), `a\n${"\n".repeat(200_000)}`), /gold\/top_customers\.csv: more than 10000 rows/],
      // Attack 36 F3: one mapping of many keys froze the gateway in the YAML library's duplicate-key check.
      ["many-keys", (set) => fs.writeFileSync(path.join(set, "eval.yaml"), `name: s\ntasks: []\nx:\n${Array.from({ length: 60_000 }, (_, i) => `  k${i}: 1`).join("\n")}\n`), /eval\.yaml: /],
      ["dup-key", (set) => fs.writeFileSync(path.join(set, "eval.yaml"), "name: s\nname: t\ntasks: []\n"), /eval\.yaml: .*name.*twice/],
      ["many-tasks", (set) => fs.writeFileSync(path.join(set, "eval.yaml"), `name: s\ntasks: [${"{},".repeat(400_000)}{}]\n`), /eval\.yaml: .*too large/]
    ]
    for (const [branch, edit, message] of cases) {
      await pushBranch(branch, edit)
      const started = Date.now()
      const answer = await useBranch(branch)
      expect(Date.now() - started, branch).toBeLessThan(10_000)
      expect(answer.status, `${branch}: ${answer.text}`).toBe(400)
      expect(answer.json.code).toBe("invalid_request")
      expect(answer.json.message, branch).toMatch(message)
    }
    expect((await useBranch("nowhere")).json.message).toMatch(/has no nowhere: push the eval set/)
    expect((await useBranch(null, "evals/absent")).json.message).toMatch(/has no folder evals\/absent/)
    // A folder with a trailing slash is refused when set, not misread later (attack 36).
    const slash = await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { eval_set: { kind: "repository", workspace_project_id: projectId, path: "evals/jaffle/", ref: null } } })
    expect(slash.status).toBe(400)
    // A commit id names the set as well as a branch does.
    expect((await useBranch(branches.get("main")!)).json.ref).toBe(`jaffle_orders@${branches.get("main")}`)
  })
})
