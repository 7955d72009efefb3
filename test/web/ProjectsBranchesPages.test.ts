import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildWebApp, chromiumAvailable, collectErrors, launchChromium, step } from "../support/Browser"
import { type Gateway, localKey } from "../support/Gateway"
import { git } from "../support/Git"
import { request } from "../support/Http"
import { startApp } from "../support/InProcess"
import { createTestDatabase, dropBranchDatabases, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !chromiumAvailable() || !(await postgresAvailable())
const FIXTURE = path.join(import.meta.dirname, "..", "fixtures", "dbt", "jaffle")

describe.skipIf(skip)("the Projects and Branches pages in a real browser (issue 30)", () => {
  let gateway: Gateway
  let database: TestDatabase
  let browser: Browser
  let page: Page
  let errors: Array<string>
  let admin: string
  let root: string

  beforeAll(async () => {
    buildWebApp()
    root = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-web-projects-"))
    fs.cpSync(FIXTURE, path.join(root, "jaffle"), { recursive: true })
    database = await createTestDatabase()
    await database.query("create table orders (id int primary key, amount numeric); insert into orders values (1, 10)")
    ;[gateway, browser] = await Promise.all([startApp({ web: true, env: { SP_PROJECT_ROOTS: root } }), launchChromium()])
    admin = await localKey(gateway)
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    expect((await request(gateway.url, "/api/projects", { key: admin, body: { name: "jaffle", path: "jaffle" } })).status).toBe(201)
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
    errors = collectErrors(page)
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    // What the page made and a failure left: this file's branches only.
    if (gateway !== undefined) {
      const left = await request(gateway.url, "/api/connections/pg/dbbranch/projects/default/branches", { key: admin }).then((r) => (r.json?.items ?? []) as ReadonlyArray<{ database: string }>, () => [])
      await gateway.stop()
      await dropBranchDatabases(left.map((b) => b.database))
    }
    await database?.drop()
    if (root !== undefined) fs.rmSync(root, { recursive: true, force: true })
  })

  it("makes a workspace project whose clone URL clones, and shows a dbt project's models by layer", async () => {
    const web = gateway.webUrl!
    let cloneUrl = ""
    await step(page, "projects workspace", async () => {
      await page.goto(`${web}/projects`)
      await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor()
      await page.getByText("No workspace projects yet.").waitFor()
      const form = page.getByRole("form", { name: "New workspace project" })
      await form.getByLabel("Name").fill("analytics")
      await form.getByRole("button", { name: "New project" }).click()
      const row = page.getByRole("row", { name: /analytics/ })
      await row.getByRole("button", { name: "Copy clone command" }).waitFor()
      cloneUrl = (await row.locator("code").textContent()) ?? ""
      expect(cloneUrl).toMatch(new RegExp(`^${web}/git/wsp_[0-9a-f]{32}\\.git$`))
    })
    // The URL the page shows clones, from the web app's own origin, with a key as the password.
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-web-clone-"))
    try {
      const cloned = await git(["clone", cloneUrl.replace("http://", `http://git:${admin}@`), "repo"], work)
      expect(cloned.code, cloned.stderr).toBe(0)
    } finally {
      fs.rmSync(work, { recursive: true, force: true })
    }

    await step(page, "projects dbt models", async () => {
      const row = page.getByRole("row", { name: /jaffle/ })
      await row.getByRole("cell", { name: "2", exact: true }).first().waitFor()
      await row.getByRole("button", { name: "Models" }).click()
      const models = page.getByRole("article", { name: "Models of jaffle" })
      await models.getByText("jaffle_shop: 5 models").waitFor()
      await models.getByRole("region", { name: "Layer marts" }).getByText("fct_orders").waitFor()
      await models.getByRole("region", { name: "Layer intermediate" }).getByText(/int_orders_joined.*← stg_orders, stg_customers/).waitFor()
    })
    expect(errors).toEqual([])
  }, 90_000)

  it("makes a branch of a connection, compares it with main and deletes it", async () => {
    await step(page, "branches new", async () => {
      await page.goto(`${gateway.webUrl!}/branches`)
      await page.getByRole("heading", { level: 1, name: "Branches" }).waitFor()
      await page.getByText("No branches of default yet.").waitFor()
      const form = page.getByRole("form", { name: "New branch" })
      await form.getByLabel("Branch name").fill("dev")
      await form.getByRole("button", { name: "New branch" }).click()
      await page.getByRole("row", { name: /dev/ }).getByRole("cell", { name: "0 dropped, 0 masked" }).waitFor({ timeout: 30_000 })
    })
    await step(page, "branches diff", async () => {
      await page.getByRole("row", { name: /dev/ }).getByRole("button", { name: "Diff" }).click()
      const diff = page.getByRole("article", { name: "Diff of dev" })
      await diff.getByText("main → dev").waitFor()
      await diff.getByText("No difference in the tables.").waitFor()
    })
    await step(page, "branches delete", async () => {
      await page.getByRole("row", { name: /dev/ }).getByRole("button", { name: "Delete" }).click()
      await page.getByRole("button", { name: "Yes, delete" }).click()
      await page.getByText("No branches of default yet.").waitFor()
    })
    expect(errors).toEqual([])
  }, 90_000)
})
