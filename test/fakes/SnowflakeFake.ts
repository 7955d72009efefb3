import { execFileSync, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as https from "node:https"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as os from "node:os"
import * as net from "node:net"
import * as path from "node:path"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"
import { gunzipSync } from "node:zlib"
import { Effect, Either, Exit, Scope } from "effect"
import { ConnectorError } from "../../layers/connectors/Connector"
import { makeScrubber } from "../../layers/connectors/DriverErrors"
import { allowAnyTarget } from "../../layers/connectors/EgressPolicy"
import { SnowflakeConnector } from "../../layers/connectors/Snowflake"
import { COLUMN_COLUMNS, informationSchemaColumns, informationSchemaRelations, RELATION_COLUMNS, snowflakeShowKeys } from "./FakeCatalog"

/**
 * A Snowflake REST endpoint for the real snowflake-sdk driver: login, query-request with JSON rowsets
 * (inline and in chunks), "query in progress" answers polled through /queries/{id}/result, abort-request,
 * heartbeat, telemetry and logout. It behaves like an account whose MULTI_STATEMENT_COUNT is 0 (any number
 * of statements), so only a client that sends MULTI_STATEMENT_COUNT=1 with each statement gets a
 * multi-statement text refused; and it enforces STATEMENT_TIMEOUT_IN_SECONDS as the server does. A schema
 * scan's information_schema reads answer with FakeCatalog.ts's catalog.
 */

export interface Certificate {
  readonly certPath: string
  readonly cert: string
  readonly key: string
}

/** A self-signed certificate for the given IP addresses and names, made with openssl. */
export const makeCertificate = (ips: ReadonlyArray<string>, names: ReadonlyArray<string> = ["localhost"]): Certificate => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "snowflake-fake-"))
  const certPath = path.join(dir, "cert.pem")
  const keyPath = path.join(dir, "key.pem")
  const san = [...ips.map((ip) => `IP:${ip}`), ...names.map((n) => `DNS:${n}`)].join(",")
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", keyPath, "-out", certPath, "-days", "2", "-subj", "/CN=snowflake-fake", "-addext", `subjectAltName=${san}`
  ], { stdio: "ignore" })
  return { certPath, cert: fs.readFileSync(certPath, "utf8"), key: fs.readFileSync(keyPath, "utf8") }
}

export interface FakeLogin {
  readonly account: string
  readonly user: string
  readonly ok: boolean
  readonly query: Record<string, string>
}

export interface FakeQuery {
  readonly queryId: string
  readonly requestId: string
  readonly sqlText: string
  readonly parameters: Record<string, unknown>
}

export interface FakeCancel {
  readonly queryId: string | null
  readonly requestId: string | null
}

export interface SnowflakeFake {
  readonly host: string
  readonly port: number
  readonly logins: Array<FakeLogin>
  readonly queries: Array<FakeQuery>
  readonly cancels: Array<FakeCancel>
  /** Chunk downloads served, by query id. */
  readonly chunksServed: Map<string, number>
  readonly logouts: () => number
  readonly openSessions: () => number
  readonly close: () => Promise<void>
}

interface Column {
  readonly name: string
  readonly type: "fixed" | "text" | "real" | "boolean" | "date"
  readonly scale?: number
}

interface Result {
  readonly columns: ReadonlyArray<Column>
  readonly rows: ReadonlyArray<ReadonlyArray<string | null>>
}

class SqlError {
  constructor(
    readonly code: string,
    readonly sqlState: string,
    readonly message: string
  ) {}
}

interface Running {
  readonly query: FakeQuery
  readonly startedAt: number
  readonly seconds: number
  readonly timeoutSeconds: number
  cancelled: boolean
}

interface Session {
  readonly database: string | null
  readonly schema: string | null
  readonly warehouse: string | null
  readonly role: string | null
}

const CHUNK_ROWS = 100
const POLL_HOLD_MS = 250
const QRMK = "fake-result-key"
const CHILD_DEADLINE_MS = 40_000

const rowtype = (c: Column) => ({
  name: c.name,
  database: "",
  schema: "",
  table: "",
  nullable: true,
  type: c.type,
  scale: c.type === "fixed" ? (c.scale ?? 0) : null,
  precision: c.type === "fixed" ? 38 : null,
  byteLength: c.type === "text" ? 16_777_216 : null,
  length: c.type === "text" ? 16_777_216 : null,
  collation: null
})

/** The statements of a text, split on semicolons outside quotes, without comments or blanks. */
const statements = (sql: string) =>
  sql
    .replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, "")
    .split(/;(?=(?:[^']*'[^']*')*[^']*$)/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0)

const catalog = (names: ReadonlyArray<string>, rows: Result["rows"]): Result => ({ columns: names.map((name) => ({ name, type: "text" })), rows })

/** What the fake database answers for one statement; a number is a SYSTEM$WAIT in seconds. */
const evaluate = (statement: string): Result | number => {
  const wait = /system\$wait\(\s*(\d+(?:\.\d+)?)\s*\)/i.exec(statement)
  if (wait) return Number(wait[1])
  const generator = /generator\(\s*rowcount\s*=>\s*(\d+)\s*\)/i.exec(statement)
  if (generator) {
    const n = Number(generator[1])
    return {
      columns: [{ name: "N", type: "fixed" }, { name: "LABEL", type: "text" }, { name: "PRICE", type: "fixed", scale: 2 }],
      rows: Array.from({ length: n }, (_, i) => [String(i + 1), `row ${i + 1}`, `${i + 1}.50`])
    }
  }
  // The privileges probe counts information_schema.tables too; the scan's read is the one that asks for table_type.
  if (/information_schema\.tables/i.test(statement) && /\btable_type\b/i.test(statement)) return catalog(RELATION_COLUMNS, informationSchemaRelations("snowflake"))
  const show = /^show\s+(primary|unique|imported)\s+keys\s+in\s+database$/i.exec(statement)
  if (show) {
    const keys = snowflakeShowKeys(show[1]!.toLowerCase() as "primary" | "unique" | "imported")
    return catalog(keys.columns, keys.rows)
  }
  if (/information_schema\.columns/i.test(statement)) return catalog(COLUMN_COLUMNS, informationSchemaColumns("snowflake"))
  if (/information_schema\.tables/i.test(statement)) return { columns: [{ name: "READABLE_TABLES", type: "fixed" }], rows: [["3"]] }
  if (/^select\s+1$/i.test(statement)) return { columns: [{ name: "1", type: "fixed" }], rows: [["1"]] }
  if (/^select\s+'([^']*)'$/i.test(statement)) {
    return { columns: [{ name: "TEXT", type: "text" }], rows: [[/^select\s+'([^']*)'$/i.exec(statement)![1]!]] }
  }
  if (/^(insert|update|delete|merge|create|drop|alter|truncate|grant)\b/i.test(statement)) {
    throw new SqlError("003001", "42501", "SQL access control error:\nInsufficient privileges to operate on table 'ORDERS'")
  }
  throw new SqlError("001003", "42000", `SQL compilation error:\nsyntax error line 1 at position 0 unexpected '${statement}'.`)
}

const readBody = async (req: IncomingMessage): Promise<any> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  if (chunks.length === 0) return {}
  const raw = Buffer.concat(chunks)
  const text = (req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw).toString("utf8")
  return text.length === 0 ? {} : JSON.parse(text)
}

const send = (res: ServerResponse, body: unknown, status = 200) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

const failure = (res: ServerResponse, error: SqlError, queryId?: string) =>
  send(res, { data: { sqlState: error.sqlState, queryId: queryId ?? null, errorCode: error.code, age: 0 }, code: error.code, message: error.message, success: false })

export const startSnowflakeFake = async (options: {
  readonly certificate: Certificate
  readonly users: Record<string, string>
  readonly host?: string
  readonly port?: number
  /** Where the result chunks' URLs point (this fake's own address by default), as cloud storage is another host. */
  readonly chunkPort?: number
  /** Answers each chunk download with a 307 to this origin, as a storage host sending the client elsewhere. */
  readonly redirectChunksTo?: string
}): Promise<SnowflakeFake> => {
  const host = options.host ?? "127.0.0.1"
  const sessions = new Map<string, Session>()
  const running = new Map<string, Running>()
  const results = new Map<string, Result>()
  const logins: Array<FakeLogin> = []
  const queries: Array<FakeQuery> = []
  const cancels: Array<FakeCancel> = []
  const chunksServed = new Map<string, number>()
  let logouts = 0
  let base = ""
  let chunkBase = ""

  const session = (req: IncomingMessage) => {
    const match = /Snowflake Token="([^"]+)"/.exec(req.headers.authorization ?? "")
    return match ? sessions.get(match[1]!) : undefined
  }

  const resultBody = (queryId: string, result: Result, s: Session) => {
    const inline = result.rows.slice(0, CHUNK_ROWS)
    const rest = result.rows.slice(CHUNK_ROWS)
    const chunkCount = Math.ceil(rest.length / CHUNK_ROWS)
    if (chunkCount > 0) results.set(queryId, result)
    return {
      data: {
        parameters: [],
        rowtype: result.columns.map(rowtype),
        rowset: inline,
        ...(chunkCount > 0
          ? {
              chunks: Array.from({ length: chunkCount }, (_, i) => ({
                url: `${chunkBase}/chunks/${queryId}/${i}`,
                rowCount: Math.min(CHUNK_ROWS, rest.length - i * CHUNK_ROWS),
                uncompressedSize: 1000,
                compressedSize: 1000
              })),
              qrmk: QRMK
            }
          : {}),
        total: result.rows.length,
        returned: result.rows.length,
        queryId,
        databaseProvider: null,
        finalDatabaseName: s.database,
        finalSchemaName: s.schema,
        finalWarehouseName: s.warehouse,
        finalRoleName: s.role,
        numberOfBinds: 0,
        arrayBindSupported: false,
        statementTypeId: 4096,
        version: 1,
        sendResultTime: Date.now(),
        queryResultFormat: "json"
      },
      code: null,
      message: null,
      success: true
    }
  }

  const inProgress = (queryId: string) => ({
    data: { queryId, getResultUrl: `/queries/${queryId}/result`, queryAbortsAfterSecs: 300, progressDesc: null },
    code: "333333",
    message: "Query execution in progress",
    success: true
  })

  /** A slow statement's state: finished, cancelled, timed out by the server, or still running. */
  const settle = (run: Running, res: ServerResponse, s: Session) => {
    const elapsed = (Date.now() - run.startedAt) / 1000
    if (run.cancelled) return failure(res, new SqlError("000604", "57014", "SQL execution canceled"), run.query.queryId)
    if (run.timeoutSeconds > 0 && elapsed >= run.timeoutSeconds && run.timeoutSeconds < run.seconds) {
      return failure(
        res,
        new SqlError("000630", "57014", `Statement reached its statement or warehouse timeout of ${run.timeoutSeconds} second(s) and was canceled.`),
        run.query.queryId
      )
    }
    if (elapsed >= run.seconds) return send(res, resultBody(run.query.queryId, { columns: [{ name: "SYSTEM$WAIT", type: "text" }], rows: [["waited"]] }, s))
    return send(res, inProgress(run.query.queryId))
  }

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", base)
    const body = await readBody(req)

    if (req.method === "POST" && url.pathname === "/session/v1/login-request") {
      const data = body.data ?? {}
      const user = String(data.LOGIN_NAME ?? "")
      const ok = options.users[user] !== undefined && options.users[user] === data.PASSWORD
      logins.push({ account: String(data.ACCOUNT_NAME ?? ""), user, ok, query: Object.fromEntries(url.searchParams) })
      if (!ok) {
        return send(res, {
          data: { nextAction: "RETRY_LOGIN", authnMethod: "USERNAME_PASSWORD", loginName: user },
          code: "390100",
          message: "Incorrect username or password was specified.",
          success: false
        })
      }
      const token = randomUUID()
      const s: Session = {
        database: url.searchParams.get("databaseName"),
        schema: url.searchParams.get("schemaName") ?? "PUBLIC",
        warehouse: url.searchParams.get("warehouse"),
        role: url.searchParams.get("roleName") ?? "PUBLIC"
      }
      sessions.set(token, s)
      return send(res, {
        data: {
          masterToken: `master-${token}`,
          token,
          validityInSeconds: 3600,
          masterValidityInSeconds: 14400,
          displayUserName: user.toUpperCase(),
          serverVersion: "9.0.0",
          firstLogin: false,
          healthCheckInterval: 45,
          sessionId: logins.length,
          parameters: [],
          sessionInfo: { databaseName: s.database, schemaName: s.schema, warehouseName: s.warehouse, roleName: s.role }
        },
        code: null,
        message: null,
        success: true
      })
    }

    // Result chunks live in cloud storage behind presigned URLs: no session token, only the result's key.
    const chunk = /^\/chunks\/([^/]+)\/(\d+)$/.exec(url.pathname)
    if (req.method === "GET" && chunk) {
      if (options.redirectChunksTo !== undefined && url.searchParams.get("redirected") === null) {
        res.writeHead(307, { location: `${options.redirectChunksTo}${url.pathname}?redirected=1` })
        return res.end()
      }
      const result = results.get(chunk[1]!)
      if (result === undefined || req.headers["x-amz-server-side-encryption-customer-key"] !== QRMK) return send(res, {}, 403)
      chunksServed.set(chunk[1]!, (chunksServed.get(chunk[1]!) ?? 0) + 1)
      const start = CHUNK_ROWS + Number(chunk[2]) * CHUNK_ROWS
      res.writeHead(200, { "content-type": "application/octet-stream" })
      return res.end(result.rows.slice(start, start + CHUNK_ROWS).map((row) => JSON.stringify(row)).join(","))
    }

    const s = session(req)
    if (s === undefined) {
      return send(res, { data: null, code: "390104", message: "User must login again to access the service.", success: false }, 401)
    }

    if (req.method === "POST" && url.pathname === "/session" && url.searchParams.get("delete") === "true") {
      const match = /Snowflake Token="([^"]+)"/.exec(req.headers.authorization ?? "")
      sessions.delete(match![1]!)
      logouts++
      return send(res, { data: null, code: null, message: null, success: true })
    }
    if (req.method === "POST" && (url.pathname === "/session/heartbeat" || url.pathname === "/telemetry/send")) {
      return send(res, { data: null, code: null, message: null, success: true })
    }

    if (req.method === "POST" && url.pathname === "/queries/v1/query-request") {
      const query: FakeQuery = {
        queryId: randomUUID(),
        requestId: url.searchParams.get("requestId") ?? "",
        sqlText: String(body.sqlText ?? ""),
        parameters: body.parameters ?? {}
      }
      queries.push(query)
      const parts = statements(query.sqlText)
      const allowed = Number(query.parameters["MULTI_STATEMENT_COUNT"] ?? 0)
      if (parts.length > 1 && allowed !== 0 && allowed !== parts.length) {
        return failure(
          res,
          new SqlError("000008", "0A000", `Actual statement count ${parts.length} did not match the desired statement count ${allowed}.`),
          query.queryId
        )
      }
      if (parts.length > 1) {
        return send(res, resultBody(query.queryId, { columns: [{ name: "multiple statement execution", type: "text" }], rows: [["Multiple statements executed successfully."]] }, s))
      }
      try {
        const outcome = evaluate(parts[0] ?? "")
        if (typeof outcome === "number") {
          const run: Running = {
            query,
            startedAt: Date.now(),
            seconds: outcome,
            timeoutSeconds: Number(query.parameters["STATEMENT_TIMEOUT_IN_SECONDS"] ?? 0),
            cancelled: false
          }
          running.set(query.queryId, run)
          return send(res, inProgress(query.queryId))
        }
        return send(res, resultBody(query.queryId, outcome, s))
      } catch (error) {
        if (error instanceof SqlError) return failure(res, error, query.queryId)
        throw error
      }
    }

    const poll = /^\/queries\/([^/]+)\/result$/.exec(url.pathname)
    if (req.method === "GET" && poll) {
      const run = running.get(poll[1]!)
      if (run === undefined) return failure(res, new SqlError("000709", "02000", "Statement not found."))
      // Hold the poll a little, as the service does, instead of answering "in progress" in a tight loop.
      const until = Date.now() + POLL_HOLD_MS
      while (Date.now() < until && !run.cancelled && (Date.now() - run.startedAt) / 1000 < Math.min(run.seconds, run.timeoutSeconds || Infinity)) {
        await new Promise((r) => setTimeout(r, 20))
      }
      return settle(run, res, s)
    }

    const abort = /^\/queries\/(?:v1|([^/]+))\/abort-request$/.exec(url.pathname)
    if (req.method === "POST" && abort) {
      const queryId = abort[1] ?? null
      const requestId = typeof body.requestId === "string" ? body.requestId : null
      cancels.push({ queryId, requestId })
      for (const run of running.values()) {
        if (run.query.queryId === queryId || run.query.requestId === requestId) run.cancelled = true
      }
      return send(res, { data: null, code: null, message: null, success: true })
    }

    return send(res, { data: null, code: "000404", message: `No route ${req.method} ${url.pathname}`, success: false }, 404)
  }

  const server = https.createServer({ cert: options.certificate.cert, key: options.certificate.key }, (req, res) => {
    handle(req, res).catch((error) => send(res, { success: false, message: String(error) }, 500))
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, host, () => resolve())
  })
  const port = (server.address() as { port: number }).port
  base = `https://${host}:${port}`
  chunkBase = `https://${host}:${options.chunkPort ?? port}`

  return {
    host,
    port,
    logins,
    queries,
    cancels,
    chunksServed,
    logouts: () => logouts,
    openSessions: () => sessions.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

export interface ChildQuery {
  readonly sql: string
  readonly timeoutMs: number
  readonly maxRows: number
  readonly attribution?: string
  /** Gives the statement a meter that refuses past this many bytes. */
  readonly maxBytes?: number
}

/** One step for the connector in the child process: a statement, a ping, the pool's counters, or statements at once (counters read meanwhile). */
export type ChildStep = ChildQuery | "ping" | "stats" | { readonly concurrent: ReadonlyArray<ChildQuery>; readonly statsAfterMs: number }

export interface ChildJob {
  readonly connection: Record<string, unknown>
  readonly endpoint: { readonly host: string; readonly port: number }
  readonly connectTimeoutMs: number
  readonly secrets: ReadonlyArray<string>
  readonly steps: ReadonlyArray<ChildStep>
  /** An egress policy that refuses this port on every host (none is refused without it). */
  readonly refusePort?: number
}

export type ChildOutcome = { readonly ok: true; readonly value: any } | { readonly ok: false; readonly step: string; readonly message: string }

export interface ChildPoolReport {
  readonly outcomes: ReadonlyArray<ChildOutcome>
  readonly afterClose: { readonly total: number; readonly idle: number; readonly waiting: number }
}

export interface ChildReport {
  /** One per job, in order. */
  readonly pools: ReadonlyArray<ChildPoolReport>
  /** Every host:port the process opened a TCP connection to. */
  readonly dialed: ReadonlyArray<string>
  /** Everything the process wrote besides the report. */
  readonly output: string
}

/**
 * Runs the Snowflake connector in a fresh Node process that trusts the fake's certificate through
 * NODE_EXTRA_CA_CERTS, as an operator would trust a private CA: Node reads it only at start-up.
 */
export const runConnectorInChild = (jobs: ReadonlyArray<ChildJob>, caPath: string, cwd: string): Promise<ChildReport> =>
  new Promise((resolve, reject) => {
    const self = fileURLToPath(import.meta.url)
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
    const child = spawn(process.execPath, ["--import", tsx, "-e", "import(process.argv[1]).then((m) => m.childMain())", self], {
      cwd,
      env: { ...process.env, NODE_EXTRA_CA_CERTS: caPath },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    const deadline = setTimeout(() => child.kill("SIGKILL"), CHILD_DEADLINE_MS)
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(deadline)
      const marker = stdout.lastIndexOf("\nREPORT ")
      if (code !== 0 || marker < 0) return reject(new Error(`connector child exited with ${code}:\n${stdout}\n${stderr}`))
      const report = JSON.parse(stdout.slice(marker + "\nREPORT ".length)) as Omit<ChildReport, "output">
      resolve({ ...report, output: stdout.slice(0, marker) + stderr })
    })
    child.stdin.end(JSON.stringify(jobs))
  })

/** The child's side: for each job, runs the steps through one pool, then closes it. The driver loads only when the pool opens, after the dial recorder is in place. */
export const childMain = async () => {
  const dialed: Array<string> = []
  const connect = net.Socket.prototype.connect as (...args: Array<any>) => net.Socket
  net.Socket.prototype.connect = function (this: net.Socket, ...args: Array<any>) {
    const options = (Array.isArray(args[0]) ? args[0][0] : args[0]) as { host?: string; port?: number } | number
    if (typeof options === "object" && options.port !== undefined) dialed.push(`${options.host ?? "localhost"}:${options.port}`)
    return connect.apply(this, args)
  } as typeof net.Socket.prototype.connect

  let input = ""
  for await (const chunk of process.stdin) input += chunk
  const jobs = JSON.parse(input) as ReadonlyArray<ChildJob>
  const attempt = async (effect: Effect.Effect<unknown, ConnectorError>): Promise<ChildOutcome> => {
    const result = await Effect.runPromise(Effect.either(effect))
    return Either.isRight(result) ? { ok: true, value: result.right ?? null } : { ok: false, step: result.left.step, message: result.left.message }
  }
  const pools: Array<ChildPoolReport> = []
  for (const job of jobs) {
    const scope = await Effect.runPromise(Scope.make())
    const pool = await Effect.runPromise(
      Scope.extend(
        SnowflakeConnector.open({
          connection: job.connection as never,
          endpoint: job.endpoint,
          connectTimeoutMs: job.connectTimeoutMs,
          scrub: makeScrubber(job.secrets),
          egress: {
            check: (endpoint) =>
              endpoint.port === job.refusePort
                ? Effect.fail(new ConnectorError({ step: "config", message: `This gateway does not connect to ${endpoint.host}: port ${endpoint.port} is refused` }))
                : allowAnyTarget.check(endpoint)
          }
        }),
        scope
      )
    )
    const outcomes: Array<ChildOutcome> = []
    for (const step of job.steps) {
      if (step === "stats") outcomes.push({ ok: true, value: pool.stats() })
      else if (step === "ping") outcomes.push(await attempt(pool.ping))
      else if ("concurrent" in step) {
        const all = Promise.all(step.concurrent.map((q) => attempt(pool.query(q.sql, q))))
        await new Promise((r) => setTimeout(r, step.statsAfterMs))
        const stats = pool.stats()
        outcomes.push({ ok: true, value: { stats, outcomes: await all } })
      } else {
        let taken = 0
        const meter = step.maxBytes === undefined ? {} : { meter: { cap: step.maxBytes, take: (bytes: number) => (taken += bytes) <= step.maxBytes! } }
        outcomes.push(await attempt(pool.query(step.sql, { ...step, ...meter })))
      }
    }
    await Effect.runPromise(Scope.close(scope, Exit.void))
    pools.push({ outcomes, afterClose: pool.stats() })
  }
  process.stdout.write(`\nREPORT ${JSON.stringify({ pools, dialed })}`)
  process.exit(0)
}
