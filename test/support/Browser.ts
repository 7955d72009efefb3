import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { REPO_ROOT } from "./Gateway"

export const CHROMIUM = "/usr/bin/chromium"
export const RESULTS_DIR = path.join(REPO_ROOT, "test-results")

export const chromiumAvailable = () => fs.existsSync(CHROMIUM)

let built = false

/** Builds the web app from the current sources, as `npm start` does (once per test file: builds must not overlap). */
export const buildWebApp = () => {
  if (built) return
  execFileSync("npx", ["vite", "build", "--config", "src/web/vite.config.ts"], { cwd: REPO_ROOT, stdio: "pipe" })
  built = true
}

// Without the background-networking flags Chromium keeps dialling Google's hosts, which this network refuses.
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
  })

/** Console errors and failed page scripts, collected for the "no console errors" checks. */
export const collectErrors = (page: Page) => {
  const errors: Array<string> = []
  page.on("console", (message) => message.type() === "error" && errors.push(`${message.text()} (${message.location().url})`))
  page.on("pageerror", (error) => errors.push(error.message))
  return errors
}

/** Saves a screenshot of the step; when the step fails, the page's HTML too. */
export const step = async (page: Page, name: string, body: () => Promise<void>) => {
  fs.mkdirSync(RESULTS_DIR, { recursive: true })
  const file = path.join(RESULTS_DIR, name.replace(/[^a-z0-9]+/gi, "-").toLowerCase())
  try {
    await body()
    await page.screenshot({ path: `${file}.png`, fullPage: true })
  } catch (error) {
    await page.screenshot({ path: `${file}.failed.png`, fullPage: true }).catch(() => undefined)
    fs.writeFileSync(`${file}.failed.html`, await page.content().catch(() => ""))
    throw error
  }
}
