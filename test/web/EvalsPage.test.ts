import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startModelFake } from "../fakes/ModelFake"
import { buildWebApp, chromiumAvailable, collectErrors, launchChromium, step } from "../support/Browser"
import { type Gateway, localKey } from "../support/Gateway"
import { git } from "../support/Git"
import { eventually } from "../support/Eventually"
import { request } from "../support/Http"
import { startApp } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !chromiumAvailable() || !(await postgresAvailable())

const MANIFEST = `name: web_evals
tasks:
  - { id: right, class: read, prompt: "TASK right: how many orders?", checks: [{ name: count, type: number, gold: 42 }] }
  - { id: off, class: read, prompt: "TASK off: how many orders?", checks: [{ name: count, type: number, gold: 42 }] }
`

describe.skipIf(skip)("the Evaluations, Accuracy and Knowledge pages in a real browser (issues 31, 32)", () => {
  let gateway: Gateway
  let database: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let browser: Browser
  let page: Page
  let errors: Array<string>
  let work: string
  let admin: string
  /** The model gets every task wrong from now on (a regression). */
  let allWrong = false

  beforeAll(async () => {
    buildWebApp()
    database = await createTestDatabase()
    await database.query("create table orders (id int primary key); insert into orders select generate_series(1, 42)")
    fake = await startModelFake((req) => ({ text: req.raw.includes("TASK right") && !allWrong ? "There are 42 orders." : "There are 41 orders." }))
    ;[gateway, browser] = await Promise.all([
      startApp({ web: true, env: { SP_LLM_PROVIDER: "anthropic", SP_LLM_BASE_URL: fake.url, SP_LLM_API_KEY: "sk-ant-web", SP_LLM_MODEL: "claude-sonnet-4-5" } }),
      launchChromium()
    ])
    admin = await localKey(gateway)
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

  it("shows the accuracy history with a regression, what changed and the tasks that broke; evaluates a proposal from the Knowledge page", async () => {
    await step(page, "accuracy regression", async () => {
      allWrong = true
      await page.goto(`${gateway.webUrl!}/evals`)
      await page.getByRole("button", { name: "Start a run" }).click()
      await page.getByRole("table", { name: "Evaluation runs" }).getByText("0 %", { exact: true }).waitFor({ timeout: 30_000 })
      // Its record is written as it ends, just after its status.
      await eventually(() => request(gateway.url, "/api/evals/accuracy", { key: admin }), (answer) => answer.json.regressions.length === 1, "the regression recorded")
      await page.getByRole("table", { name: "Evaluation runs" }).getByText("manual").first().waitFor()
      await page.goto(`${gateway.webUrl!}/accuracy`)
      await page.getByRole("heading", { level: 1, name: "Accuracy" }).waitFor()
      const regression = page.getByRole("region", { name: "Regressions" }).getByRole("article")
      await regression.getByText("50 points below 50 %").waitFor({ timeout: 10_000 })
      await regression.getByText("Nothing since the last comparable run").waitFor()
      expect(await regression.locator("dt:has-text('Tasks that broke') + dd").textContent()).toBe("right")
      await page.getByRole("img", { name: "Accuracy of 2 runs, 1 regression(s)" }).waitFor()
      const runs = page.getByRole("table", { name: /^Runs of web_evals@/ })
      expect(await runs.getByRole("row").count()).toBe(3)
      await runs.getByText("regression", { exact: true }).waitFor()
    })

    await step(page, "knowledge evaluate proposal", async () => {
      const writer = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "agent", scopes: ["read", "write"] } })).json.key
      const client = new Client({ name: "web-test", version: "1.0.0" })
      await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gateway.url), { requestInit: { headers: { "x-api-key": writer } } }))
      await client.callTool({ name: "propose_knowledge", arguments: { scope: "org", category: "decisions", title: "orders-counted-when-paid", body: "An order counts once paid." } })
      await client.close()
      await page.goto(`${gateway.webUrl!}/knowledge`)
      await page.getByRole("region", { name: "To review" }).getByRole("button", { name: "orders-counted-when-paid" }).click()
      await page.getByRole("button", { name: "Evaluate this proposal" }).click()
      await page.getByRole("status").getByText(/Evaluation run evr_[0-9a-f]{32} started/).waitFor()
      await page.getByRole("status").getByRole("link", { name: "Evaluations" }).click()
      await page.getByRole("table", { name: "Evaluation runs" }).getByText("evaluate change").waitFor()
    })
    expect(errors).toEqual([])
  }, 90_000)
})
