import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { request } from "./Http"
import { MIGRATED_STORE } from "./template"

import { CLI_ENTRY, GATEWAY_ENTRY, REPO_ROOT } from "./Build"

export { buildServer, CLI_ENTRY, GATEWAY_ENTRY, REPO_ROOT } from "./Build"

/** A running gateway, in this process (`startApp`) or as its own (`startGateway`). */
export interface Gateway {
  readonly url: string
  readonly port: number
  /** The web app's origin, when started with `web: true` (otherwise SP_WEB_PORT=0: none). */
  readonly webUrl: string | null
  /** The notebook origin, when started with `notebooks: true` (otherwise SP_NOTEBOOK_PORT=0: none). */
  readonly notebookUrl: string | null
  readonly dataDir: string
  readonly logs: () => string
  /** Whether it is still up: nothing ended it (a crash, an exit, a failed layer). */
  readonly running: () => boolean
  /** Graceful stop, waiting for the end. */
  readonly stop: () => Promise<void>
}

export interface GatewayProcess extends Gateway {
  readonly process: ChildProcess
  /** SIGKILL, waiting for the exit. */
  readonly kill: () => Promise<void>
}

export interface GatewayOptions {
  readonly env?: Record<string, string>
  readonly dataDir?: string
  readonly databaseUrl?: string
  readonly web?: boolean
  readonly notebooks?: boolean
}

export const CLOUD_ENCRYPTION = { SP_ENCRYPTION_KEY: "test-encryption-key-for-cloud-gateways", SP_ENCRYPTION_SALT: "test-salt-0123456789" }

// Ports the kernel hands out for listen(0) and outgoing connections come from its ephemeral range
// (32768-60999 here). A port found free there can be taken by another worker's fake server or a
// client socket before the gateway binds it, and the health check then reaches the wrong process.
// Each test worker takes its ports from its own block below that range instead.
const PORTS_PER_WORKER = 1_000
const workerBlock = 20_000 + (Number(process.env["VITEST_POOL_ID"] ?? 0) % 12) * PORTS_PER_WORKER
let nextPort = 0

const bindable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

export const freePort = async (): Promise<number> => {
  for (let tries = 0; tries < PORTS_PER_WORKER; tries++) {
    const port = workerBlock + (nextPort++ % PORTS_PER_WORKER)
    if (await bindable(port)) return port
  }
  throw new Error(`no free port in ${workerBlock}-${workerBlock + PORTS_PER_WORKER - 1}`)
}

// Read from the environment, not vitest's inject: benches import this file outside vitest, where importing vitest throws.
const migratedStore = (): string | null => process.env[MIGRATED_STORE] ?? null

/** A new data dir; in a test run it holds a copy of the run's migrated embedded store, so a start skips initdb and migrations (benches start empty). */
export const tempDataDir = (): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-"))
  const store = migratedStore()
  if (store !== null) fs.cpSync(store, path.join(dir, "pgdata"), { recursive: true })
  return dir
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once("exit", () => resolve())
  })

/** Runs the built gateway as a real process with the given settings and waits until /health answers: for tests about processes (signals, kill -9, replicas). */
export const startGateway = async (options: GatewayOptions & { nodeArgs?: ReadonlyArray<string> } = {}): Promise<GatewayProcess> => {
  const port = await freePort()
  const webPort = options.web === true ? await freePort() : 0
  const notebookPort = options.notebooks === true ? await freePort() : 0
  const dataDir = options.dataDir ?? tempDataDir()
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("SP_") && k !== "DATABASE_URL" && k !== "REDIS_URL")
  )
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), GATEWAY_ENTRY], {
    cwd: REPO_ROOT,
    env: {
      ...inherited,
      SP_PORT: String(port),
      SP_WEB_PORT: String(webPort),
      SP_NOTEBOOK_PORT: String(notebookPort),
      SP_DATA_DIR: dataDir,
      ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
      // Cloud refuses to start without both; tests that check that refusal pass their own env.
      ...(options.env?.["SP_DEPLOYMENT_MODE"] === "cloud" ? CLOUD_ENCRYPTION : {}),
      ...options.env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (d) => (output += d))
  child.stderr!.on("data", (d) => (output += d))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 45_000
  while (true) {
    if (child.exitCode !== null) throw new Error(`gateway exited with ${child.exitCode} before it was healthy:\n${output}`)
    // Its own "Listening" line, so a health answer from another process on the port does not count.
    const ok = new RegExp(`Listening on http://\\S+:${port}\\b`).test(output) && (await request(url, "/health").then((r) => r.status === 200, () => false))
    if (ok) break
    if (Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`gateway did not become healthy in time:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url,
    port,
    webUrl: webPort === 0 ? null : `http://127.0.0.1:${webPort}`,
    notebookUrl: notebookPort === 0 ? null : `http://127.0.0.1:${notebookPort}`,
    dataDir,
    process: child,
    logs: () => output,
    running: () => child.exitCode === null && child.signalCode === null,
    stop: async () => {
      child.kill("SIGTERM")
      await exited(child)
    },
    kill: async () => {
      child.kill("SIGKILL")
      await exited(child)
    }
  }
}

/** Runs the `sluice` CLI to completion. */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [CLI_ENTRY, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    // "close", not "exit": the exit can come before the last of its output has been read.
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

export const localKey = async (gateway: Gateway): Promise<string> => {
  const response = await request(gateway.url, "/local-api-key")
  if (response.status !== 200) throw new Error(`no local key: ${response.text}`)
  return response.json.key
}

/** `sluice worker` as its own process: a runner without the HTTP server. */
export const startWorker = async (env: Record<string, string>) => {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SP_") && k !== "DATABASE_URL"))
  const child = spawn(process.execPath, [CLI_ENTRY, "worker"], { cwd: REPO_ROOT, env: { ...inherited, SP_DATA_DIR: tempDataDir(), ...env }, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout!.on("data", (d) => (output += d))
  child.stderr!.on("data", (d) => (output += d))
  const deadline = Date.now() + 30_000
  while (!output.includes("running jobs")) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`worker did not start:\n${output}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return { process: child, logs: () => output }
}
