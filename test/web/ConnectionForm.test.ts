import { randomBytes } from "node:crypto"
import type { Browser, Locator, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ALL_SCOPES } from "../../src/domain/Scope"
import { buildWebApp, chromiumAvailable, collectErrors, launchChromium, step } from "../support/Browser"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { createTestDatabase, mysqlAvailable, postgresAvailable, TEST_MYSQL_URL } from "../support/Servers"

const skip = !chromiumAvailable()
const hasPostgres = await postgresAvailable()
const hasMysql = await mysqlAvailable()
if (skip && process.env["CI"] === "true") throw new Error("Chromium is not installed at /usr/bin/chromium (.ci/run installs it)")
if (skip) console.warn("skipping the connection form's browser tests: no /usr/bin/chromium (apt-get install -y chromium)")

const UNCHANGED = "Unchanged unless you type a new one"

/** Labels each type's form must show, and labels of other types' fields it must not. */
const FIELDS_BY_TYPE = {
  postgresql: {
    groups: ["Connection", "TLS", "SSH tunnel", "Database branches", "Limits", "Schema and tables", "Description and tags"],
    shown: ["Host", "Port", "Database", "Schema", "Username", "Password", "TLS mode", "CA certificate (PEM)", "Client certificate (PEM)", "Client key (PEM)",
      "SSH host", "SSH port", "SSH user", "Private key", "Key passphrase", "SSH password", "Host key fingerprint",
      "Branching service", "Service project ID", "Parent branch ID", "Service API key", "Query timeout (seconds)",
      "Connection timeout (seconds)", "Row limit", "Result cache (seconds)", "Schemas to scan", "Schemas to skip", "Schema refresh (seconds)",
      "Blocked tables", "Allowed tables", "Allowed functions", "Description", "Tags"],
    hidden: ["Account", "Warehouse", "Role", "Database file", "Project", "Maximum bytes billed", "HTTP path", "Catalog", "Protocol"]
  },
  mysql: {
    groups: ["Connection", "TLS", "SSH tunnel", "Limits", "Schema and tables", "Description and tags"],
    shown: ["Host", "Port", "Database", "Username", "Password", "TLS mode", "SSH host", "Private key", "Row limit", "Tags"],
    hidden: ["Schema", "Account", "Warehouse", "Database file", "Catalog", "Service API key"]
  },
  sqlite: {
    groups: ["Connection", "Limits", "Schema and tables", "Description and tags"],
    shown: ["Database file", "Query timeout (seconds)", "Row limit", "Blocked tables", "Tags"],
    hidden: ["Host", "Port", "Database", "Username", "Password", "TLS mode", "SSH host", "Schema", "Account"]
  },
  snowflake: {
    groups: ["Connection", "Limits", "Schema and tables", "Description and tags"],
    shown: ["Account", "Host", "Username", "Password", "Warehouse", "Database", "Role", "Schema", "Row limit", "Tags"],
    hidden: ["Port", "TLS mode", "SSH host", "Database file", "Project", "HTTP path"]
  },
  bigquery: {
    groups: ["Connection", "Limits", "Schema and tables", "Description and tags"],
    shown: ["Project", "Dataset", "Service account key (JSON)", "API endpoint", "Location", "Maximum bytes billed", "Row limit"],
    hidden: ["Host", "Port", "Username", "Password", "TLS mode", "SSH host", "Account"]
  },
  databricks: {
    groups: ["Connection", "Limits", "Schema and tables", "Description and tags"],
    shown: ["Host", "HTTP path", "Access token", "Catalog", "Schema"],
    hidden: ["Port", "Username", "Password", "TLS mode", "SSH host"]
  }
} as const

const field = (form: Locator, label: string) => form.getByLabel(label, { exact: true })

describe.skipIf(skip)("the connection form and the keys page in a real browser, against a started gateway", () => {
  let gateway: Gateway
  let browser: Browser
  let page: Page
  let web: string
  let admin: string
  let pageErrors: Array<string>

  beforeAll(async () => {
    buildWebApp()
    ;[gateway, browser] = await Promise.all([startApp({ web: true }), launchChromium()])
    web = gateway.webUrl!
    admin = await localKey(gateway)
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
    pageErrors = collectErrors(page)
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await gateway?.stop()
  })

  const openAddForm = async () => {
    await page.goto(`${web}/connections`)
    await page.getByRole("button", { name: "Add connection" }).click()
    return page.getByRole("form", { name: "Add a connection" })
  }

  const connection = async (name: string) => {
    const response = await request(gateway.url, `/api/connections/${name}`, { key: admin })
    expect(response.status, response.text).toBe(200)
    return response.json
  }

  it("shows each db_type the fields that apply to it, grouped, and none that do not", async () => {
    const form = await openAddForm()
    for (const [dbType, expected] of Object.entries(FIELDS_BY_TYPE)) {
      await step(page, `form fields ${dbType}`, async () => {
        await field(form, "Type").selectOption(dbType)
        const legends = await form.locator("fieldset > legend").allTextContents()
        expect(legends, dbType).toEqual(expected.groups)
        for (const label of expected.shown) expect(await field(form, label).count(), `${dbType} shows ${label}`).toBe(1)
        for (const label of expected.hidden) expect(await field(form, label).count(), `${dbType} hides ${label}`).toBe(0)
      })
    }
    // Shared settings typed before the type changes stay; the other type's own fields go.
    await field(form, "Type").selectOption("postgresql")
    await field(form, "Host").fill("db.example.com")
    await field(form, "Row limit").fill("42")
    await field(form, "Type").selectOption("sqlite")
    await field(form, "Type").selectOption("postgresql")
    expect([await field(form, "Host").inputValue(), await field(form, "Row limit").inputValue()]).toEqual(["", "42"])
  })

  it.skipIf(!hasPostgres)("creates PostgreSQL with TLS, limits and tags through the form, stores exactly those, and edits it without retyping the password", async () => {
    const db = await createTestDatabase()
    try {
      await step(page, "form pg 01 created with TLS, a timeout, a row limit and two tags", async () => {
        const form = await openAddForm()
        await field(form, "Name").fill("pg_form")
        await field(form, "Type").selectOption("postgresql")
        await field(form, "Host").fill("127.0.0.1")
        await field(form, "Port").fill("5432")
        await field(form, "Database").fill(db.name)
        await field(form, "Username").fill("root")
        await field(form, "Password").fill("s3cret pass")
        await field(form, "TLS mode").selectOption("require")
        await field(form, "Query timeout (seconds)").fill("45")
        await field(form, "Row limit").fill("250")
        await field(form, "Tags").fill("prod, finance")
        await form.getByRole("button", { name: "Save connection" }).click()
        await form.waitFor({ state: "detached" })
        await page.getByRole("row", { name: /pg_form/ }).waitFor()
      })
      const created = await connection("pg_form")
      const { created_at: _c, updated_at: _u, ...stored } = created
      expect(stored).toEqual({
        name: "pg_form",
        db_type: "postgresql",
        description: null,
        tags: ["prod", "finance"],
        host: "127.0.0.1",
        port: 5432,
        database: db.name,
        username: "root",
        tls: { mode: "require", client_key_pem_set: false },
        query_timeout: 45,
        max_rows: 250,
        password_set: true,
        access_token_set: false,
        credentials_json_set: false,
        source: "api",
        read_only: false
      })

      await step(page, "form pg 02 edited without retyping the password; the test connects", async () => {
        const row = page.getByRole("row", { name: /pg_form/ })
        await row.getByRole("button", { name: "Edit" }).click()
        const form = page.getByRole("form", { name: "Edit pg_form" })
        expect(await field(form, "TLS mode").inputValue()).toBe("require")
        expect(await field(form, "Query timeout (seconds)").inputValue()).toBe("45")
        expect(await field(form, "Row limit").inputValue()).toBe("250")
        expect(await field(form, "Tags").inputValue()).toBe("prod, finance")
        const password = field(form, "Password")
        expect([await password.inputValue(), await password.getAttribute("placeholder")]).toEqual(["", UNCHANGED])
        expect(await field(form, "Client key (PEM)").getAttribute("placeholder"), "no client key is stored").toBeNull()
        // The local server has no TLS: turning it off is the edit, and the connection test then proves the target still opens.
        await field(form, "TLS mode").selectOption("disable")
        await form.getByRole("button", { name: "Save connection" }).click()
        await form.waitFor({ state: "detached" })
        await row.getByRole("button", { name: "Test" }).click()
        await row.getByText(/Connected in \d+ ms/).waitFor()
      })
      const edited = await connection("pg_form")
      expect([edited.password_set, edited.tls, edited.query_timeout, edited.max_rows, edited.tags]).toEqual([
        true,
        { mode: "disable", client_key_pem_set: false },
        45,
        250,
        ["prod", "finance"]
      ])
    } finally {
      await db.drop()
    }
  })

  // The test PostgreSQL trusts every local login, so only a server that checks passwords shows the stored one was kept.
  it.skipIf(!hasMysql)("keeps a password MariaDB checks through an edit that leaves it empty, and replaces it when one is typed", async () => {
    const mysql = await import("mysql2/promise")
    const server = await mysql.createConnection({ uri: TEST_MYSQL_URL })
    const user = `sluice_form_${randomBytes(4).toString("hex")}`
    const password = `pw-${randomBytes(8).toString("hex")}`
    await server.query(`create user '${user}'@'%' identified by '${password}'`)
    const url = new URL(TEST_MYSQL_URL)
    try {
      const row = page.getByRole("row", { name: /maria_form/ })
      const save = async (form: Locator) => {
        await form.getByRole("button", { name: "Save connection" }).click()
        await form.waitFor({ state: "detached" })
      }
      const testSays = async (outcome: RegExp) => {
        await row.getByRole("button", { name: "Test" }).click()
        await row.getByRole("status").filter({ hasText: outcome }).waitFor()
      }
      await step(page, "form maria 01 created with a password; the test connects", async () => {
        const form = await openAddForm()
        await field(form, "Name").fill("maria_form")
        await field(form, "Type").selectOption("mysql")
        await field(form, "Host").fill(url.hostname)
        await field(form, "Port").fill(url.port || "3306")
        await field(form, "Username").fill(user)
        await field(form, "Password").fill(password)
        await save(form)
        await testSays(/Connected in \d+ ms/)
      })
      await step(page, "form maria 02 edited with the password left empty; the test still connects", async () => {
        await row.getByRole("button", { name: "Edit" }).click()
        const form = page.getByRole("form", { name: "Edit maria_form" })
        expect(await field(form, "Password").getAttribute("placeholder")).toBe(UNCHANGED)
        await field(form, "Row limit").fill("10")
        await save(form)
        await testSays(/Connected in \d+ ms/)
      })
      expect((await connection("maria_form")).max_rows).toBe(10)
      await step(page, "form maria 03 a typed password replaces the stored one", async () => {
        await row.getByRole("button", { name: "Edit" }).click()
        const form = page.getByRole("form", { name: "Edit maria_form" })
        await field(form, "Password").fill("not-the-password")
        await save(form)
        await testSays(/^Failed/)
      })
    } finally {
      await server.query(`drop user if exists '${user}'@'%'`)
      await server.end()
    }
    expect(pageErrors, pageErrors.join("\n")).toEqual([])
  })

  it("keeps the keys page and the open connection form within a 390 px window", async () => {
    const made = await request(gateway.url, "/api/keys", { key: admin, body: { name: "a-rather-long-key-name-for-a-phone", scopes: [...ALL_SCOPES] } })
    expect(made.status, made.text).toBe(201)
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } })
    const narrow = await context.newPage()
    const errors = collectErrors(narrow)
    try {
      await step(narrow, "narrow keys", async () => {
        await narrow.goto(`${web}/keys`)
        await narrow.getByRole("row", { name: /a-rather-long-key-name-for-a-phone/ }).waitFor()
        expect(await narrow.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390)
      })
      await step(narrow, "narrow connection form", async () => {
        await narrow.goto(`${web}/connections`)
        await narrow.getByRole("button", { name: "Add connection" }).click()
        await narrow.getByRole("form", { name: "Add a connection" }).getByLabel("Type", { exact: true }).selectOption("postgresql")
        expect(await narrow.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390)
      })
      expect(errors, errors.join("\n")).toEqual([])
    } finally {
      await context.close()
    }
  })
})
