import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startModelFake } from "../fakes/ModelFake"
import { buildWebApp, chromiumAvailable, collectErrors, launchChromium, step } from "../support/Browser"
import { type Gateway, localKey } from "../support/Gateway"
import { git } from "../support/Git"
import { request } from "../support/Http"
import { startApp } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !chromiumAvailable() || !(await postgresAvailable())

const MANIFEST = `name: web_evals
tasks:
  - { id: right, class: read, prompt: "TASK right: how many orders?", checks: [{ name: count, type: number, gold: 42 }] }
  - { id: off, class: read, prompt: "TASK off: how many orders?", checks: [{ name: count, type: number, gold: 42 }] }
`

describe.skipIf(skip)("the Evaluations page in a real browser (issue 31)", () => {
  let gateway: Gateway
  let database: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let browser: Browser
  let page: Page
  let errors: Array<string>
  let work: string

  beforeAll(async () => {
    buildWebApp()
    database = await createTestDatabase()
    await database.query("create table orders (id int primary key); insert into orders select generate_series(1, 42)")
    fake = await startModelFake((req) => ({ text: req.raw.includes("TASK right") ? "There are 42 orders." : "There are 41 orders." }))
    ;[gateway, browser] = await Promise.all([
      startApp({ web: true, env: { SP_LLM_PROVIDER: "anthropic", SP_LLM_BASE_URL: fake.url, SP_LLM_API_KEY: "sk-ant-web", SP_LLM_MODEL: "claude-sonnet-4-5" } }),
      launchChromium()
    ])
    const admin = await localKey(gateway)
    const connection = { name: "shop", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    const projectId = (await request(gateway.url, "/api/workspace-projects", { key: admin, body: { name: "evals" } })).json.id
    work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-evalspage-"))
    expect((await git(["clone", "-q", `${gateway.url.replace("http://", `http://git:${admin}@`)}/git/${projectId}.git`, "repo"], work)).code).toBe(0)
    const repo = path.join(work, "repo")
    fs.writeFileSync(path.join(repo, "eval.yaml"), MANIFEST)
    await git(["add", "-A"], repo)
    await git(["commit", "-q", "-m", "set"], repo)
    expect((await git(["push", "-q", "origin", "HEAD:main"], repo)).code).toBe(0)
    const config = { runner_profile: "python-sandbox", connection_name: "shop", eval_set: { kind: "repository", workspace_project_id: projectId, path: ".", ref: null } }
    expect((await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: config })).status).toBe(200)
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true })).newPage()
    errors = collectErrors(page)
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await gateway?.stop()
    await fake?.close()
    await database?.drop()
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true })
  })

  it("shows the settings, starts a run, follows its tasks to their verdicts, shows a transcript and exports the run", async () => {
    await step(page, "evals settings", async () => {
      await page.goto(`${gateway.webUrl!}/evals`)
      await page.getByRole("heading", { level: 1, name: "Evaluations" }).waitFor()
      await page.getByLabel("Evaluation settings").getByText("shop").waitFor()
      await page.getByText("No runs yet.").waitFor()
    })

    await step(page, "evals run", async () => {
      await page.getByRole("button", { name: "Start a run" }).click()
      const tasks = page.getByRole("table", { name: /^Tasks of evr_/ })
      await tasks.getByRole("row", { name: /right/ }).getByText("CORRECT").waitFor({ timeout: 30_000 })
      await tasks.getByRole("row", { name: /off/ }).getByText("WRONG").waitFor({ timeout: 30_000 })
      await page.getByRole("table", { name: "Evaluation runs" }).getByText("50 %").waitFor({ timeout: 10_000 })
    })

    await step(page, "evals transcript", async () => {
      const tasks = page.getByRole("table", { name: /^Tasks of evr_/ })
      await tasks.getByRole("row", { name: /right/ }).getByRole("button", { name: "Show transcript" }).click()
      await page.getByText("There are 42 orders.").first().waitFor()
    })

    await step(page, "evals export", async () => {
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export" }).click()])
      expect(download.suggestedFilename()).toMatch(/^evr_[0-9a-f]{32}\.zip$/)
      const saved = path.join(work, "export.zip")
      await download.saveAs(saved)
      expect(fs.readFileSync(saved).subarray(0, 2).toString()).toBe("PK")
    })
    expect(errors).toEqual([])
  }, 90_000)
})
