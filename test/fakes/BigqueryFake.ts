import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { generateKeyPairSync, type KeyObject, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import type * as http from "node:http"
import * as https from "node:https"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { decodeJwt, jwtVerify } from "jose"
import type { CatalogQueries } from "../../src/schema/catalog/CatalogQueries"
import { COLUMN_COLUMNS, factRows, informationSchemaColumns, informationSchemaRelations, keyColumnRows, RELATION_COLUMNS } from "./FakeCatalog"

/**
 * A BigQuery REST fake over HTTPS, for the real @google-cloud/bigquery driver: the OAuth token endpoint
 * (JWT-bearer grant, signature checked against the registered service-account key), jobs.insert
 * (dry run and real), jobs.getQueryResults (paged, held while a job runs) and jobs.cancel. It knows
 * only the statements a test defines; anything else is a syntax error, as an unknown query would be.
 */

const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"
const BIGQUERY_SCOPE = "https://www.googleapis.com/auth/bigquery"
// How long getQueryResults holds a call while the job runs (BigQuery's own default is 10 s).
const HOLD_MS = 500

export interface FakeField {
  readonly name: string
  readonly type: string
  readonly mode?: string
}

export interface FakeStatement {
  /** What a dry run reports: SELECT, INSERT, CREATE_TABLE, SCRIPT… */
  readonly statementType: string
  readonly totalBytesProcessed?: number
  readonly fields?: ReadonlyArray<FakeField>
  /** Cells as BigQuery sends them: strings or null (TIMESTAMP in microseconds). */
  readonly rows?: ReadonlyArray<ReadonlyArray<string | null>>
  /** How long the job runs before its results are ready. */
  readonly runMs?: number
  /** Answers the statement's jobs.insert with a 307 to this URL instead. */
  readonly redirectTo?: string
}

export interface FakeJob {
  readonly jobId: string
  readonly sql: string
  readonly configuration: any
  readonly location: string
  readonly startedAt: number
  cancelled: boolean
  /** maxResults asked for by each getQueryResults call that returned rows. */
  readonly pages: Array<number | null>
  rowsServed: number
}

export interface ServiceAccount {
  readonly json: string
  readonly privateKey: string
}

export interface BigqueryFake {
  readonly url: string
  readonly caPath: string
  readonly define: (sql: string, statement: FakeStatement) => void
  /** Defines a schema scan's reads (as `bigqueryCatalog` words them) to answer with FakeCatalog.ts's catalog. */
  readonly defineCatalog: (queries: CatalogQueries) => void
  /** A service-account key whose token_uri is this fake; `registered: false` signs with a key the fake does not know. */
  readonly serviceAccount: (options?: { readonly registered?: boolean }) => ServiceAccount
  readonly dryRuns: Array<{ readonly sql: string; readonly configuration: any }>
  /** Jobs that really ran, by id. */
  readonly jobs: Map<string, FakeJob>
  readonly cancels: Array<string>
  /** Every request as "METHOD /path". */
  readonly requests: Array<string>
  readonly tokensIssued: () => number
  readonly close: () => Promise<void>
}

const normalize = (sql: string) =>
  sql
    .replace(/\/\*[\s\S]*?\*\//g, " ")
    .replace(/--[^\n]*/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .toLowerCase()

const certificate = (dir: string) => {
  const keyPath = path.join(dir, "key.pem")
  const certPath = path.join(dir, "cert.pem")
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", keyPath, "-out", certPath, "-days", "2", "-subj", "/CN=bigquery-fake", "-addext", "subjectAltName=IP:127.0.0.1"
  ], { stdio: "ignore" })
  return { certPath, cert: fs.readFileSync(certPath, "utf8"), key: fs.readFileSync(keyPath, "utf8") }
}

const googleError = (code: number, status: string, reason: string, message: string) => ({
  error: { code, message, errors: [{ message, domain: "global", reason }], status }
})

export const startBigqueryFake = async (project: string): Promise<BigqueryFake> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-bq-fake-"))
  const tls = certificate(dir)
  const statements = new Map<string, FakeStatement>()
  const keys = new Map<string, KeyObject>()
  const tokens = new Set<string>()
  const dryRuns: BigqueryFake["dryRuns"] = []
  const jobs = new Map<string, FakeJob>()
  const cancels: Array<string> = []
  const requests: Array<string> = []
  const email = `sluice-test@${project}.iam.gserviceaccount.com`
  let url = ""

  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json; charset=UTF-8" })
    res.end(JSON.stringify(body))
  }

  const token = async (body: string, res: http.ServerResponse) => {
    const form = new URLSearchParams(body)
    const assertion = form.get("assertion") ?? ""
    const refuse = () => send(res, 400, { error: "invalid_grant", error_description: "Invalid JWT Signature." })
    if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") return send(res, 400, { error: "unsupported_grant_type" })
    let issuer: unknown
    try {
      issuer = decodeJwt(assertion).iss
    } catch {
      return refuse()
    }
    const key = typeof issuer === "string" ? keys.get(issuer) : undefined
    if (key === undefined) return send(res, 400, { error: "invalid_grant", error_description: "Invalid grant: account not found" })
    try {
      const { payload } = await jwtVerify(assertion, key, { algorithms: ["RS256"], audience: [GOOGLE_TOKEN_URL, `${url}/token`] })
      if (!String(payload["scope"] ?? "").split(" ").includes(BIGQUERY_SCOPE)) return send(res, 400, { error: "invalid_scope" })
    } catch {
      return refuse()
    }
    const issued = `ya29.fake-${randomUUID()}`
    tokens.add(issued)
    send(res, 200, { access_token: issued, expires_in: 3599, token_type: "Bearer" })
  }

  const jobResource = (job: FakeJob, location: string) => ({
    kind: "bigquery#job",
    id: `${project}:${location}.${job.jobId}`,
    jobReference: { projectId: project, jobId: job.jobId, location },
    configuration: job.configuration,
    status: { state: job.cancelled ? "DONE" : "RUNNING" },
    statistics: { creationTime: String(job.startedAt), startTime: String(job.startedAt) }
  })

  const insert = (body: any, res: http.ServerResponse) => {
    const configuration = body?.configuration ?? {}
    const sql = String(configuration.query?.query ?? "")
    const location = body?.jobReference?.location ?? "US"
    if (configuration.query?.useLegacySql !== false) {
      // The REST API defaults to legacy SQL, which this fake (like the connector) does not speak.
      return send(res, 400, googleError(400, "INVALID_ARGUMENT", "invalidQuery", "Legacy SQL is not supported by this fake: set useLegacySql to false"))
    }
    const statement = statements.get(normalize(sql))
    if (statement === undefined) {
      return send(res, 400, googleError(400, "INVALID_ARGUMENT", "invalidQuery", `Syntax error: Unexpected identifier at [1:1]`))
    }
    if (statement.redirectTo !== undefined) {
      res.writeHead(307, { location: statement.redirectTo })
      return void res.end()
    }
    const bytes = String(statement.totalBytesProcessed ?? 0)
    if (configuration.dryRun === true) {
      dryRuns.push({ sql, configuration })
      return send(res, 200, {
        kind: "bigquery#job",
        jobReference: { projectId: project, location },
        configuration,
        status: { state: "DONE" },
        statistics: { totalBytesProcessed: bytes, query: { totalBytesProcessed: bytes, statementType: statement.statementType, schema: { fields: statement.fields ?? [] } } }
      })
    }
    const jobId = String(body?.jobReference?.jobId ?? randomUUID())
    const job: FakeJob = { jobId, sql, configuration, location, startedAt: Date.now(), cancelled: false, pages: [], rowsServed: 0 }
    jobs.set(jobId, job)
    const cap = configuration.query?.maximumBytesBilled
    if (cap !== undefined && Number(bytes) > Number(cap)) {
      const error = { reason: "bytesBilledLimitExceeded", message: `Query exceeded limit for bytes billed: ${cap}. ${bytes} or higher required.` }
      return send(res, 200, { ...jobResource(job, location), status: { state: "DONE", errorResult: error, errors: [error] } })
    }
    send(res, 200, jobResource(job, location))
  }

  const results = (jobId: string, query: URLSearchParams, res: http.ServerResponse) => {
    const job = jobs.get(jobId)
    if (job === undefined) return send(res, 404, googleError(404, "NOT_FOUND", "notFound", `Not found: Job ${project}:${jobId}`))
    const statement = statements.get(normalize(job.sql))!
    const answer = () => {
      if (job.cancelled) {
        return send(res, 400, googleError(400, "INVALID_ARGUMENT", "stopped", "Job execution was cancelled: User requested cancellation"))
      }
      const reference = { projectId: project, jobId, location: query.get("location") ?? "US" }
      if (Date.now() - job.startedAt < (statement.runMs ?? 0)) {
        return send(res, 200, { kind: "bigquery#getQueryResultsResponse", jobReference: reference, jobComplete: false })
      }
      const all = statement.rows ?? []
      const start = Number(query.get("pageToken") ?? 0)
      const maxResults = query.get("maxResults")
      const end = maxResults === null ? all.length : Math.min(all.length, start + Number(maxResults))
      const page = all.slice(start, end)
      job.pages.push(maxResults === null ? null : Number(maxResults))
      job.rowsServed += page.length
      send(res, 200, {
        kind: "bigquery#getQueryResultsResponse",
        jobReference: reference,
        jobComplete: true,
        schema: { fields: statement.fields ?? [] },
        totalRows: String(all.length),
        ...(page.length > 0 ? { rows: page.map((row) => ({ f: row.map((v) => ({ v })) })) } : {}),
        ...(end < all.length ? { pageToken: String(end) } : {}),
        totalBytesProcessed: String(statement.totalBytesProcessed ?? 0),
        cacheHit: false
      })
    }
    const remaining = (statement.runMs ?? 0) - (Date.now() - job.startedAt)
    if (remaining > 0 && !job.cancelled) setTimeout(answer, Math.min(remaining, HOLD_MS))
    else answer()
  }

  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const target = new URL(req.url ?? "/", "https://fake")
      requests.push(`${req.method} ${target.pathname}`)
      const body = Buffer.concat(chunks).toString("utf8")
      if (req.method === "POST" && target.pathname === "/token") return void token(body, res)
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1]
      if (bearer === undefined || !tokens.has(bearer)) {
        return send(res, 401, googleError(401, "UNAUTHENTICATED", "authError", "Request had invalid authentication credentials."))
      }
      const base = `/bigquery/v2/projects/${project}`
      const cancel = new RegExp(`^${base}/jobs/([^/]+)/cancel$`).exec(target.pathname)
      const poll = new RegExp(`^${base}/queries/([^/]+)$`).exec(target.pathname)
      if (req.method === "POST" && target.pathname === `${base}/jobs`) return insert(JSON.parse(body), res)
      if (req.method === "GET" && poll) return results(decodeURIComponent(poll[1]!), target.searchParams, res)
      if (req.method === "POST" && cancel) {
        const jobId = decodeURIComponent(cancel[1]!)
        cancels.push(jobId)
        const job = jobs.get(jobId)
        if (job === undefined) return send(res, 404, googleError(404, "NOT_FOUND", "notFound", `Not found: Job ${project}:${jobId}`))
        job.cancelled = true
        return send(res, 200, { kind: "bigquery#jobCancelResponse", job: jobResource(job, target.searchParams.get("location") ?? "US") })
      }
      send(res, 404, googleError(404, "NOT_FOUND", "notFound", `Not found: ${target.pathname}`))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `https://127.0.0.1:${(server.address() as { port: number }).port}`

  const serviceAccount = (options: { readonly registered?: boolean } = {}): ServiceAccount => {
    const pair = generateKeyPairSync("rsa", { modulusLength: 2048 })
    if (options.registered !== false) keys.set(email, pair.publicKey)
    const privateKey = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString()
    const json = JSON.stringify({
      type: "service_account",
      project_id: project,
      private_key_id: randomUUID().replaceAll("-", ""),
      private_key: privateKey,
      client_email: email,
      client_id: "1234567890",
      auth_uri: "https://accounts.google.com/o/oauth2/auth",
      token_uri: `${url}/token`
    })
    return { json, privateKey }
  }

  return {
    url,
    caPath: tls.certPath,
    define: (sql, statement) => statements.set(normalize(sql), statement),
    defineCatalog: (queries) => {
      const fields = (names: ReadonlyArray<string>) => names.map((name) => ({ name, type: "STRING" }))
      const answer = (sql: string, names: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string | null>>) =>
        statements.set(normalize(sql), { statementType: "SELECT", fields: fields(names), rows })
      answer(queries.relations, RELATION_COLUMNS, informationSchemaRelations("bigquery"))
      answer(queries.columns, COLUMN_COLUMNS, informationSchemaColumns("bigquery"))
      if (typeof queries.keyColumns === "string") {
        answer(queries.keyColumns, ["schema", "table", "name", "kind", "column", "ref_schema", "ref_table", "ref_column"], keyColumnRows())
      }
      const FACT_COLUMNS = ["schema", "table", "fact", "value"]
      for (const sql of queries.facts ?? []) {
        if (/is_partitioning_column/i.test(sql)) answer(sql, FACT_COLUMNS, [...factRows("cluster_key"), ...factRows("partition_key")])
        else if (/__TABLES__/.test(sql)) answer(sql, FACT_COLUMNS, [...factRows("row_estimate"), ...factRows("size_bytes")])
        else if (/TABLE_OPTIONS/.test(sql)) answer(sql, FACT_COLUMNS, factRows("comment"))
      }
    },
    serviceAccount,
    dryRuns,
    jobs,
    cancels,
    requests,
    tokensIssued: () => tokens.size,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

export interface ConnectorStep {
  /** "start" forks a query, leaves it running and goes on half a second later. */
  readonly op: "ping" | "query" | "start" | "stats"
  readonly sql?: string
  readonly timeoutMs?: number
  readonly maxRows?: number
  /** Gives the query a meter that refuses past this many bytes. */
  readonly maxBytes?: number
  /** Interrupts the query from outside (as a caller going away would) after this long. */
  readonly interruptAfterMs?: number
}

export type StepOutcome =
  | { readonly ok: true; readonly value: any }
  | { readonly ok: false; readonly step: string; readonly message: string }
  | { readonly ok: false; readonly interrupted: true }

export interface ConnectorRun {
  /** Opening the pool: ok, or the ConnectorError it failed with. */
  readonly open: StepOutcome
  readonly results: Array<StepOutcome>
  /** Every host and ip:port the process has dialled or looked up so far. */
  readonly dialled: Array<string>
}

/** An egress policy for the child's pool that refuses a port on every host once it has passed `afterChecks` checks. */
export interface RefusedPort {
  readonly port: number
  readonly afterChecks: number
}

export interface ConnectorProcess {
  readonly run: (
    connection: Record<string, unknown>,
    secrets: ReadonlyArray<string>,
    steps: ReadonlyArray<ConnectorStep>,
    refuse?: RefusedPort
  ) => Promise<ConnectorRun>
  readonly stop: () => Promise<void>
}

const REPO_ROOT = path.resolve(import.meta.dirname, "../..")

// Runs in the child: opens the connector through openTarget as the gateway does, and reports every socket it opens.
const CHILD_SOURCE = `
import net from "node:net"
const { Effect, Exit, Cause } = await import("effect")
const { openTarget } = await import(${JSON.stringify(pathToFileURL(path.join(REPO_ROOT, "layers/connectors/ConnectorPools.ts")).href)})
const { allowAnyTarget } = await import(${JSON.stringify(pathToFileURL(path.join(REPO_ROOT, "layers/connectors/EgressPolicy.ts")).href)})
const { ConnectorError } = await import(${JSON.stringify(pathToFileURL(path.join(REPO_ROOT, "layers/connectors/Connector.ts")).href)})
// Refuses one port on every host once it has passed afterChecks checks; allows the rest.
const policy = (refuse) => {
  let passed = 0
  return {
    check: (endpoint) =>
      refuse !== undefined && endpoint.port === refuse.port && passed++ >= refuse.afterChecks
        ? Effect.fail(new ConnectorError({ step: "config", message: "This gateway does not connect to " + endpoint.host + ": port " + endpoint.port + " is refused" }))
        : allowAnyTarget.check(endpoint)
  }
}
const dialled = new Set()
// Every TCP and TLS socket, whatever library opens it, goes through Socket.prototype.connect.
const connect = net.Socket.prototype.connect
net.Socket.prototype.connect = function (...args) {
  this.on("connectionAttempt", (ip, port) => dialled.add(ip + ":" + port))
  this.on("lookup", (_error, _address, _family, host) => dialled.add(host))
  return connect.apply(this, args)
}
const failed = (e) => ({ ok: false, step: e.step, message: e.message })
const outcome = (effect) => Effect.match(effect, { onSuccess: (value) => ({ ok: true, value }), onFailure: failed })
process.on("message", async ({ id, connection, secrets, steps, refuse }) => {
  const results = []
  const exit = await Effect.runPromiseExit(Effect.scoped(Effect.gen(function* () {
    const pool = yield* openTarget({ orgId: "o", connectionId: "c", version: 1, connection, secrets }, policy(refuse))
    for (const s of steps) {
      if (s.op === "ping") results.push(yield* outcome(pool.ping))
      else if (s.op === "stats") results.push({ ok: true, value: pool.stats() })
      else if (s.op === "start") {
        yield* Effect.forkDaemon(pool.query(s.sql, { timeoutMs: s.timeoutMs ?? 60000, maxRows: 1 }))
        yield* Effect.sleep(500)
        results.push({ ok: true, value: null })
      }
      else {
        let taken = 0
        const meter = s.maxBytes === undefined ? {} : { meter: { cap: s.maxBytes, take: (bytes) => (taken += bytes) <= s.maxBytes } }
        const query = pool.query(s.sql, { timeoutMs: s.timeoutMs ?? 10000, maxRows: s.maxRows ?? 100, ...meter })
        results.push(yield* s.interruptAfterMs === undefined
          ? outcome(query)
          : Effect.match(Effect.timeout(query, s.interruptAfterMs), {
              onSuccess: (value) => ({ ok: true, value }),
              onFailure: (e) => (e._tag === "TimeoutException" ? { ok: false, interrupted: true } : failed(e))
            }))
      }
    }
  })))
  const open = Exit.isSuccess(exit) ? { ok: true, value: null } : failed(Cause.squash(exit.cause))
  process.send({ id, open, results, dialled: [...dialled] })
})
process.send({ ready: true })
`

/**
 * The connector in a child process that trusts the fake's certificate through NODE_EXTRA_CA_CERTS, as a
 * gateway would trust a real one through the system store. Node 20 reads extra CAs only at start-up,
 * and the driver's keep-alive agent ignores https.globalAgent, so the test process cannot trust it itself.
 */
export const startConnectorProcess = async (caPath: string): Promise<ConnectorProcess> => {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", CHILD_SOURCE], {
    cwd: REPO_ROOT,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: caPath },
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  const waiting = new Map<number, (run: ConnectorRun) => void>()
  let next = 0
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`connector process exited with ${code}`)))
    child.on("message", (message: any) => {
      if (message.ready) return resolve()
      waiting.get(message.id)?.(message)
      waiting.delete(message.id)
    })
  })
  return {
    run: (connection, secrets, steps, refuse) =>
      new Promise((resolve) => {
        const id = next++
        waiting.set(id, resolve)
        child.send({ id, connection, secrets, steps, refuse })
      }),
    stop: async () => {
      if (child.exitCode !== null) return
      const exited = new Promise((resolve) => child.once("exit", resolve))
      child.kill("SIGTERM")
      await exited
    }
  }
}
