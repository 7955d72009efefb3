import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, it } from "vitest"
import { freePort, GATEWAY_ENTRY, REPO_ROOT } from "../support/Gateway"

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-cfg-"))
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))

/** Starts the gateway with exactly these settings; one that gets past config (it logs its address) is killed and reported. */
const startWith = async (env: Record<string, string>) => {
  const port = await freePort()
  return new Promise<{ code: number | null; signal: string | null; stderr: string; stdout: string }>((resolve) => {
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("SP_") && k !== "DATABASE_URL" && k !== "REDIS_URL")
    )
    const child = spawn(process.execPath, [GATEWAY_ENTRY], {
      cwd: REPO_ROOT,
      env: { ...inherited, SP_PORT: String(port), SP_WEB_PORT: "0", SP_NOTEBOOK_PORT: "0", SP_DATA_DIR: dataDir, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => {
      stdout += d
      child.kill("SIGKILL")
    })
    child.stderr.on("data", (d) => (stderr += d))
    // Only a hung start reaches this; seven cold starts share two cores with the rest of the suite.
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000)
    // "close", not "exit": the exit can come before the last of its stderr has been read.
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stderr, stdout })
    })
  })
}

const cases: Array<[label: string, env: Record<string, string>, variable: string]> = [
  ["a port that is not a number", { SP_PORT: "notaport" }, "SP_PORT"],
  ["a negative rate limit", { SP_PER_KEY_RPM: "-3" }, "SP_PER_KEY_RPM"],
  ["an unknown deployment mode", { SP_DEPLOYMENT_MODE: "moon" }, "SP_DEPLOYMENT_MODE"],
  ["cloud without DATABASE_URL", { SP_DEPLOYMENT_MODE: "cloud" }, "DATABASE_URL"],
  [
    "cloud with local access",
    { SP_DEPLOYMENT_MODE: "cloud", SP_LOCAL_ACCESS: "true", DATABASE_URL: "postgres://x@127.0.0.1/x" },
    "SP_LOCAL_ACCESS"
  ],
  ["a JWT leeway out of range", { SP_JWT_LEEWAY: "9999" }, "SP_JWT_LEEWAY"],
  ["a DATABASE_URL that is not a URL", { DATABASE_URL: "not a url" }, "DATABASE_URL"],
  ["a BigQuery emulator override", { BIGQUERY_EMULATOR_HOST: "evil.example:9050" }, "BIGQUERY_EMULATOR_HOST"],
  ["a connection URL of no known type", { SP_CONNECTION_LEGACY: "oracle://scott:tiger@db/orcl" }, "SP_CONNECTION_LEGACY"],
  ["an incomplete connection URL", { SP_CONNECTION_SALES: "postgresql://db.example.com" }, "SP_CONNECTION_SALES"],
  ["an S3 object store without a bucket", { SP_OBJECT_STORE: "s3" }, "SP_S3_BUCKET"],
  ["an S3 key without its secret", { SP_S3_BUCKET: "evidence", SP_S3_ACCESS_KEY_ID: "AKIAEXAMPLE" }, "SP_S3_SECRET_ACCESS_KEY"],
  [
    "a connection from the environment in cloud",
    { SP_DEPLOYMENT_MODE: "cloud", DATABASE_URL: "postgres://x@127.0.0.1/x", SP_CONNECTION_SALES: "postgresql://u@h/d" },
    "SP_CONNECTION_SALES"
  ]
]

describe("bad configuration stops the gateway at start", () => {
  it.concurrent.for(cases)("%s: exit 1 and one stderr line naming the variable", { timeout: 100_000 }, async ([, env, variable], { expect }) => {
    const result = await startWith(env)
    expect(result.signal, `the gateway started anyway:\n${result.stdout}${result.stderr}`).toBeNull()
    expect(result.code).toBe(1)
    const lines = result.stderr.split("\n").filter((line) => line.trim().length > 0 && !line.startsWith("npm warn"))
    expect(lines, result.stderr).toHaveLength(1)
    expect(lines[0]).toMatch(/^sluice: /)
    expect(lines[0]).toContain(variable)
    expect(result.stdout).toBe("")
    expect(result.stderr, "a password from a URL was echoed").not.toContain("tiger")
  })
})
