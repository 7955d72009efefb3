import * as fs from "node:fs"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildWebApp, chromiumAvailable, collectErrors, launchChromium, step } from "../support/Browser"
import { type Gateway, localKey } from "../support/Gateway"
import { request } from "../support/Http"
import { startApp } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !chromiumAvailable() || !fs.existsSync("/usr/bin/bwrap") || !(await postgresAvailable())

describe.skipIf(skip)("the Sandboxes page in a real browser (issue 29)", () => {
  let gateway: Gateway
  let database: TestDatabase
  let browser: Browser
  let page: Page
  let errors: Array<string>

  beforeAll(async () => {
    buildWebApp()
    database = await createTestDatabase()
    await database.query("create table people (id int, email text); insert into people values (1, 'ada.lovelace@example.org')")
    ;[gateway, browser] = await Promise.all([startApp({ web: true, notebooks: true }), launchChromium()])
    const admin = await localKey(gateway)
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    await request(gateway.url, "/api/connections/pg/pii", { key: admin, method: "PUT", body: { rules: [{ table: "people", column: "email", action: "redact" }] } })
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
    errors = collectErrors(page)
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await gateway?.stop()
    await database?.drop()
  })

  it("makes a sandbox, runs code that queries through the gate and keeps its state, shows a failure, deletes it", async () => {
    await step(page, "sandboxes new", async () => {
      await page.goto(`${gateway.webUrl!}/sandboxes`)
      await page.getByRole("heading", { level: 1, name: "Sandboxes" }).waitFor()
      await page.getByText("No sandboxes yet.").waitFor()
      const form = page.getByRole("form", { name: "New sandbox" })
      await form.getByLabel("Label").fill("exploration")
      await form.getByRole("button", { name: "New sandbox" }).click()
      await page.getByRole("cell", { name: "exploration" }).waitFor()
    })

    await step(page, "sandboxes run", async () => {
      const console = page.getByRole("article", { name: /^Sandbox sbx_/ })
      await console.getByLabel("Code").fill("import sluice\nrows = sluice.query('select id, email from people').rows\nprint(rows)")
      await console.getByRole("button", { name: "Run" }).click()
      const output = console.getByRole("list", { name: "Output" })
      await output.locator("pre.stdout", { hasText: "[[1, '[REDACTED]']]" }).waitFor()
      await console.getByLabel("Code").fill("print(len(rows))\n1/0")
      await console.getByRole("button", { name: "Run" }).click()
      await output.locator("pre.error", { hasText: "ZeroDivisionError: division by zero" }).waitFor()
      await output.locator("pre.stdout", { hasText: /^1\s*$/ }).waitFor()
      await page.getByRole("row", { name: /exploration/ }).getByRole("cell", { name: "2", exact: true }).first().waitFor()
      expect(await page.content()).not.toContain("lovelace")
    })

    await step(page, "sandboxes notebook", async () => {
      const [tab] = await Promise.all([page.waitForEvent("popup"), page.getByRole("button", { name: "Open notebook" }).click()])
      await tab.waitForURL(/\/notebook\/nb_[0-9a-f]+\/tree$/, { timeout: 30_000 })
      // The session's own origin, on the notebook port.
      expect(new URL(tab.url()).origin).toBe(`http://nb-${/nb_([0-9a-f]{32})/.exec(tab.url())![1]}.localhost:${new URL(gateway.notebookUrl!).port}`)
      await tab.locator("#notebook_list").waitFor({ timeout: 30_000 })
      await tab.screenshot({ path: "test-results/sandboxes-notebook-tab.png" })
      await tab.close()
    })

    await step(page, "sandboxes delete", async () => {
      await page.getByRole("button", { name: "Delete" }).click()
      await page.getByRole("button", { name: "Yes, delete" }).click()
      await page.getByRole("row", { name: /exploration/ }).getByRole("cell", { name: "stopped" }).waitFor()
    })
    expect(errors).toEqual([])
  }, 90_000)
})
