import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ModelReply, type ModelRequest, startModelFake } from "../fakes/ModelFake"
import { buildWebApp, chromiumAvailable, collectErrors, launchChromium, step } from "../support/Browser"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !chromiumAvailable() || !(await postgresAvailable())
const MODEL_KEY = "sk-ant-set-in-the-web-app"
const lastUserText = (req: ModelRequest) => JSON.stringify(req.body.messages.at(-1))

describe.skipIf(skip)("the Chat and Agent runs pages in a real browser (issue 19)", () => {
  let gateway: Gateway
  let browser: Browser
  let page: Page
  let errors: Array<string>
  let database: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let admin: string
  let script: (req: ModelRequest) => ModelReply | Promise<ModelReply> = () => ({ text: "unscripted" })

  beforeAll(async () => {
    buildWebApp()
    database = await createTestDatabase()
    await database.query(`create table customers (id int primary key, name text, email text);
      insert into customers values (1, 'Ada', 'ada@example.com'), (2, 'Grace', 'grace@example.com');
      create table orders (id int primary key, customer_id int references customers, total numeric);
      insert into orders select g, 1 + g % 2, g * 10 from generate_series(1, 42) g; analyze customers; analyze orders;`)
    fake = await startModelFake((req) => script(req))
    // No model key on the gateway: the user sets the organization's own in the page. Every query of this test costs enough to ask.
    ;[gateway, browser] = await Promise.all([
      startApp({ web: true, env: { SP_LLM_PROVIDER: "anthropic", SP_LLM_BASE_URL: fake.url, SP_LLM_MODEL: "claude-sonnet-4-5", SP_AGENT_QUERY_APPROVAL_USD: "0.000001" } }),
      launchChromium()
    ])
    admin = await localKey(gateway)
    const connection = { name: "shop", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    expect((await request(gateway.url, "/api/connections/shop/pii", { key: admin, method: "PUT", body: { rules: [{ table: "customers", column: "email", action: "mask" }] } })).status).toBe(200)
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
    errors = collectErrors(page)
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await gateway?.stop()
    await fake?.close()
    await database?.drop()
  })

  it("sets the model key, asks a question, approves the agent's query, sees each step with its SQL and masked columns, answers a question, cancels, and finds the runs", async () => {
    const web = gateway.webUrl!
    await step(page, "chat model key", async () => {
      await page.goto(`${web}/chat`)
      await page.getByRole("heading", { level: 1, name: "Chat" }).waitFor()
      await page.getByText("Model key: not set").waitFor()
      await page.getByLabel(/API key of the model provider/).fill(MODEL_KEY)
      await page.getByRole("button", { name: "Save key" }).click()
      await page.getByText("Model key: set for this organization").waitFor()
      expect(await page.content()).not.toContain(MODEL_KEY)
    })

    await step(page, "chat question approval answer", async () => {
      script = (req) => {
        if (req.toolResults.length === 0) {
          return { text: "Counting.", toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "select c.name, c.email, count(*) as orders from customers c join orders o on o.customer_id = c.id group by 1, 2 order by 1" } }] }
        }
        return { text: "Ada has 21 orders and Grace has 21.", paceMs: 250 }
      }
      await page.getByRole("button", { name: "New conversation" }).click()
      await page.getByLabel("Message", { exact: true }).fill("How many orders does each customer have?")
      await page.getByRole("button", { name: "Send" }).click()
      const approval = page.getByRole("group", { name: "Approve the query" })
      await approval.waitFor()
      await approval.getByText("select c.name, c.email").waitFor()
      await approval.getByRole("button", { name: "Approve" }).click()
      // The answer streams in word by word before the run ends.
      const writing = page.getByLabel("The agent is writing")
      await writing.waitFor()
      const partial = (await writing.textContent()) ?? ""
      expect(partial.length).toBeGreaterThan(0)
      expect("Ada has 21 orders and Grace has 21.".startsWith(partial)).toBe(true)
      expect(partial).not.toBe("Ada has 21 orders and Grace has 21.")
      await page.getByText("Ada has 21 orders and Grace has 21.").waitFor()
      await writing.waitFor({ state: "detached" })
      const steps = page.getByRole("list", { name: "Steps" }).first()
      await steps.getByText("query_database").waitFor()
      await steps.getByText("2 rows").waitFor()
      await steps.getByText("masked: email").waitFor()
      await steps.getByText("approved").waitFor()
      // What the model said on its way to the tool is part of its step.
      await steps.getByText("Counting.").waitFor()
      expect(await page.content()).not.toContain("ada@example.com")
      expect(fake.received.every((r) => r.headers["x-api-key"] === MODEL_KEY)).toBe(true)
      // The conversation is named by the question.
      await page.getByRole("button", { name: "How many orders does each customer have?" }).waitFor()
      // The answer published as a report, the question as its title, both as text.
      await page.getByRole("button", { name: "Publish as report" }).click()
      await page.getByText("Published: see").waitFor()
      const [report] = (await request(gateway.url, "/api/reports", { key: admin })).json.items
      expect(report).toMatchObject({ title: "How many orders does each customer have?", kind: "report" })
      expect((await request(gateway.url, `/api/reports/${report.id}`, { key: admin })).json.html).toContain('<div class="answer">Ada has 21 orders and Grace has 21.</div>')
    })

    await step(page, "chat clarification and cancel", async () => {
      script = (req) =>
        req.toolResults.length === 0
          ? { toolCalls: [{ name: "ask_user", args: { question: lastUserText(req).includes("cancel me") ? "Which year?" : "Which customers?" } }] }
          : { text: `Fine: ${req.toolResults[0]!.text}.` }
      await page.getByLabel("Message", { exact: true }).fill("And their totals?")
      await page.getByRole("button", { name: "Send" }).click()
      await page.getByRole("form", { name: "Answer the agent" }).waitFor()
      await page.getByLabel(/The agent asks: Which customers\?/).fill("only Ada")
      await page.getByRole("button", { name: "Answer" }).click()
      await page.getByText("Fine: only Ada.").waitFor()

      await page.getByLabel("Message", { exact: true }).fill("cancel me")
      await page.getByRole("button", { name: "Send" }).click()
      await page.getByLabel(/The agent asks: Which year\?/).waitFor()
      await page.getByRole("button", { name: "Cancel run" }).click()
      await page.getByRole("list", { name: "Steps" }).last().getByText("cancelled").waitFor()
      await page.getByRole("button", { name: "Send" }).waitFor()
      expect(await page.getByRole("button", { name: "Send" }).isEnabled()).toBe(true)
    })

    await step(page, "agent runs page", async () => {
      await page.goto(`${web}/runs`)
      await page.getByRole("heading", { level: 1, name: "Agent runs" }).waitFor()
      const rows = page.locator("tbody tr")
      await rows.nth(2).waitFor()
      expect(await rows.count()).toBe(3)
      await page.getByText("cancelled", { exact: true }).waitFor()
      await page.getByText("completed", { exact: true }).first().waitFor()
      const oldest = rows.nth(2)
      expect(await oldest.textContent()).toContain("How many orders does each customer have?")
      await oldest.getByRole("button", { name: "Show steps" }).click()
      await page.getByRole("list", { name: "Steps" }).getByText("query_database").waitFor()
    })
    expect(errors).toEqual([])
  }, 90_000)
})
