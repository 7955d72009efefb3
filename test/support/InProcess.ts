import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { NodeHttpServer } from "@effect/platform-node"
import { Cause, ConfigProvider, Effect, Exit, Fiber, Layer, Logger, ManagedRuntime, Option, TestContext } from "effect"
import { GatewayLive, ServicesLive } from "../../app/App"
import { servingApp } from "../../app/HttpServer"
import { notebookServer } from "../../app/NotebookServer"
import { DbtProxyServerLive } from "../../app/DbtProxyServer"
import { AppConfig } from "../../layers/AppConfig"
import { LOCAL_ORG, LOCAL_USER } from "../../src/domain/Ids"
import type { Principal } from "../../src/domain/Principal"
import type { Scope } from "../../src/domain/Scope"
import { ALL_SCOPES } from "../../src/domain/Scope"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { ApiKeys } from "../../src/services/ApiKeys"
import { CLOUD_ENCRYPTION, freePort, type Gateway, type GatewayOptions, tempDataDir } from "./Gateway"
import { request } from "./Http"

/**
 * The gateway's own app and services in this process, on a fresh embedded store, behind the same
 * request pipeline, with no local access: no process start per test. `env` adds settings.
 */
export const inProcessApp = (env: Record<string, string> = {}) =>
  servingApp((app, pipeline) => Layer.mergeAll(HttpServer.serve(app, pipeline.wrap), notebookServer(pipeline), DbtProxyServerLive)).pipe(
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provide(
      Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["SP_DATA_DIR", tempDataDir()], ["SP_LOCAL_ACCESS", "false"], ["SP_WEB_PORT", "0"], ["SP_NOTEBOOK_PORT", "0"], ...Object.entries(env)])))
    )
  )

/** The self-hosted org's operator, as the CLI acts: every scope, to make keys and connections with. */
export const localOperator: Principal = { kind: "local", orgId: LOCAL_ORG, userId: LOCAL_USER, keyId: null, keyPrefix: null, scopes: ALL_SCOPES, role: "admin" }

/**
 * The in-process gateway as a server on a loopback port, for tests that speak HTTP to it with plain
 * requests: its URL, a key with `scopes`, a way to run effects against its services, and `stop`.
 */
export const startInProcess = async (env: Record<string, string> = {}, options: { readonly notebooks?: boolean; readonly testClock?: boolean; readonly dbtProxy?: boolean } = {}) => {
  const notebookPort = options.notebooks === true ? await freePort() : 0
  const dbtProxyPort = options.dbtProxy === true ? await freePort() : 0
  const app = inProcessApp({ ...env, SP_NOTEBOOK_PORT: String(notebookPort), SP_DBT_PROXY_PORT: String(dbtProxyPort) })
  // On the test clock, the services' own timers (idle snapshots, reapers) move only when the test adjusts it.
  const runtime = ManagedRuntime.make(options.testClock === true ? Layer.provideMerge(app, TestContext.TestContext) : app)
  const address = await runtime.runPromise(HttpServer.addressWith((address) => Effect.succeed(address)))
  const url = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
  const keyWith = (scopes: ReadonlyArray<Scope>) =>
    runtime.runPromise(Effect.flatMap(ApiKeys, (keys) => keys.create(localOperator, { name: `k-${Math.random()}`, scopes: [...scopes] })).pipe(Effect.map((k) => k.key)))
  const notebookUrl = notebookPort === 0 ? null : `http://127.0.0.1:${notebookPort}`
  return { url, notebookUrl, dbtProxyPort, runtime, keyWith, stop: () => runtime.dispose() }
}

/**
 * A cloud gateway in this process on the store at `storeUrl`, where the local user is platform
 * staff and an admin member of the local organization, which is allow-listed for evaluations:
 * the gateway and a key of that user's with read, write and admin.
 */
export const startCloudEvalStaff = async (storeUrl: string) => {
  const gateway = await startInProcess({ SP_DEPLOYMENT_MODE: "cloud", DATABASE_URL: storeUrl, ...CLOUD_ENCRYPTION, SP_ADMIN_USER_IDS: LOCAL_USER, SP_EVAL_ALLOWED_ORGS: LOCAL_ORG })
  await gateway.runtime.runPromise(
    Effect.flatMap(OrgsRepo, (orgs) => orgs.ensureMember({ orgId: LOCAL_ORG, orgName: "staff", userId: LOCAL_USER, role: "admin" })).pipe(Effect.provide(OrgsRepo.Default))
  )
  return { gateway, admin: await gateway.keyWith(["read", "write", "admin"]) }
}

/**
 * The whole gateway as `npm start` runs it (server, web server, loops, job runner), in this
 * process, with settings from `env` alone: what a test of a route's logic needs, without a process
 * start. Its log lines are kept for `logs()` instead of printed.
 */
export const startApp = async (options: GatewayOptions = {}): Promise<Gateway> => {
  const port = await freePort()
  const webPort = options.web === true ? await freePort() : 0
  const notebookPort = options.notebooks === true ? await freePort() : 0
  const dataDir = options.dataDir ?? tempDataDir()
  const settings = new Map<string, string>([
    ["SP_PORT", String(port)],
    ["SP_WEB_PORT", String(webPort)],
    ["SP_NOTEBOOK_PORT", String(notebookPort)],
    ["SP_DATA_DIR", dataDir],
    ...(options.databaseUrl ? [["DATABASE_URL", options.databaseUrl] as const] : []),
    ...(options.env?.["SP_DEPLOYMENT_MODE"] === "cloud" ? Object.entries(CLOUD_ENCRYPTION) : []),
    ...Object.entries(options.env ?? {})
  ])
  // The embedded store sets this process's umask as the gateway's own start does; it is put back on stop.
  const umask = process.umask(0o022)
  process.umask(umask)
  let output = ""
  const keepLines = Logger.replace(
    Logger.defaultLogger,
    Logger.map(Logger.logfmtLogger, (line) => void (output += `${line}\n`))
  )
  const fiber = Effect.runFork(
    Layer.launch(GatewayLive).pipe(
      Effect.provide(AppConfig.Default),
      Effect.provide(keepLines),
      Effect.withConfigProvider(ConfigProvider.fromMap(settings))
    )
  )
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 45_000
  while (true) {
    const ended = fiber.unsafePoll()
    if (ended !== null) {
      throw new Error(`gateway ended before it was healthy:\n${Exit.isFailure(ended) ? Cause.pretty(ended.cause) : ""}\n${output}`)
    }
    if (/Listening on /.test(output) && (await request(url, "/health").then((r) => r.status === 200, () => false))) break
    if (Date.now() > deadline) {
      await Effect.runPromise(Fiber.interrupt(fiber))
      throw new Error(`gateway did not become healthy in time:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  return {
    url,
    port,
    webUrl: webPort === 0 ? null : `http://127.0.0.1:${webPort}`,
    notebookUrl: notebookPort === 0 ? null : `http://127.0.0.1:${notebookPort}`,
    dataDir,
    logs: () => output,
    running: () => fiber.unsafePoll() === null,
    stop: async () => {
      const stopped = await Effect.runPromise(Fiber.interrupt(fiber).pipe(Effect.timeout("20 seconds"), Effect.option))
      process.umask(umask)
      if (Option.isNone(stopped)) throw new Error(`gateway did not stop within 20 s:\n${output.slice(-4000)}`)
    }
  }
}

/** The branch databases an in-process gateway's own store holds records of (for a test to drop on its way out). */
export const branchDatabasesOf = (gateway: { readonly runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown> }) =>
  gateway.runtime
    .runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ database_name: string }>`select database_name from db_branches`))
    .then((rows) => rows.map((row) => row.database_name), () => [])
