import { execFileSync, spawn } from "node:child_process"
import { randomBytes, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ConnectorError } from "../../../layers/connectors/Connector"
import { DatabricksConnector, driverConfig } from "../../../layers/connectors/Databricks"
import { makeScrubber } from "../../../layers/connectors/DriverErrors"
import type { DatabricksInput } from "../../../src/domain/Connection"
import { type Gateway, localKey, REPO_ROOT, startGateway } from "../../support/Gateway"
import { request } from "../../support/Http"
import { TEST_DATABRICKS_HOST, TEST_DATABRICKS_HTTP_PATH, TEST_DATABRICKS_TOKEN } from "../../support/Servers"

type Databricks = typeof DatabricksInput.Type

const TOKEN = "dapi-token-never-shown-5512"
const HTTP_PATH = "/sql/1.0/warehouses/fake0123"

// The Thrift service the real warehouse speaks, from the driver's own generated code and the thrift library.
const require = createRequire(import.meta.url)
const T = require("@databricks/sql/thrift/TCLIService_types")
const { Processor } = require("@databricks/sql/thrift/TCLIService")
const { TBufferedTransport, TBinaryProtocol } = require("thrift")
const Int64 = require("node-int64")

/** A CA and a server certificate it signed, for localhost and the given addresses. */
const makeCertificates = (dir: string, ips: ReadonlyArray<string>) => {
  const openssl = (...args: Array<string>) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" })
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
  openssl("req", "-x509", ...ec, "-days", "1", "-subj", "/CN=sluice test CA", "-keyout", "ca.key", "-out", "ca.pem")
  openssl("req", ...ec, "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr")
  fs.writeFileSync(path.join(dir, "ext.cnf"), `subjectAltName=DNS:localhost,${ips.map((ip) => `IP:${ip}`).join(",")}\n`)
  openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-extfile", "ext.cnf", "-out", "server.pem")
  return { ca: path.join(dir, "ca.pem"), key: fs.readFileSync(path.join(dir, "server.key")), cert: fs.readFileSync(path.join(dir, "server.pem")) }
}

type ColumnType = "INT_TYPE" | "BIGINT_TYPE"
interface FakeOperation {
  readonly sql: string
  readonly queryTimeout: number
  state: "running" | "finished" | "error" | "cancelled" | "closed"
  readonly columns: ReadonlyArray<{ readonly name: string; readonly type: ColumnType }>
  readonly rows: ReadonlyArray<ReadonlyArray<number>>
  cursor: number
  readonly fetched: Array<number>
}

/**
 * A Databricks SQL warehouse as far as the driver can tell: Thrift over HTTPS at one path, a bearer token,
 * sessions and asynchronous operations polled for their state and fetched in column-based pages.
 * `sleep` statements run until cancelled; `numbers` has 25 rows; an unknown table is an error.
 */
/** With `redirectTo`, a hostile workspace: every request is answered with a 307 to the same path on that origin. */
const startFake = async (tls: { key: Buffer; cert: Buffer }, host = "127.0.0.1", port = 0, redirectTo?: string) => {
  const seen = { sessions: [] as Array<{ catalog?: string; schema?: string }>, closedSessions: 0, unauthorized: 0, requests: 0 }
  const operations = new Map<string, FakeOperation>()
  const ok = () => new T.TStatus({ statusCode: T.TStatusCode.SUCCESS_STATUS })
  const handle = () => new T.THandleIdentifier({ guid: Buffer.from(randomUUID().replaceAll("-", ""), "hex"), secret: randomBytes(16) })
  const find = (req: { operationHandle: { operationId: { guid: Buffer } } }) => operations.get(req.operationHandle.operationId.guid.toString("hex"))!
  const plan = (sql: string): Pick<FakeOperation, "state" | "columns" | "rows"> => {
    if (/sleep\(/i.test(sql)) return { state: "running", columns: [{ name: "slept", type: "INT_TYPE" }], rows: [] }
    if (/from numbers/i.test(sql)) return { state: "finished", columns: [{ name: "id", type: "INT_TYPE" }], rows: Array.from({ length: 25 }, (_, i) => [i + 1]) }
    if (/readable_tables/i.test(sql)) return { state: "finished", columns: [{ name: "readable_tables", type: "BIGINT_TYPE" }], rows: [[3]] }
    if (/select 1\s*$/i.test(sql)) return { state: "finished", columns: [{ name: "1", type: "INT_TYPE" }], rows: [[1]] }
    return { state: "error", columns: [], rows: [] }
  }
  const column = (type: ColumnType, values: ReadonlyArray<number>) => {
    const nulls = Buffer.alloc(Math.ceil(values.length / 8))
    return type === "INT_TYPE"
      ? new T.TColumn({ i32Val: new T.TI32Column({ values, nulls }) })
      : new T.TColumn({ i64Val: new T.TI64Column({ values: values.map((v) => new Int64(v)), nulls }) })
  }
  const STATES = { running: "RUNNING_STATE", finished: "FINISHED_STATE", error: "ERROR_STATE", cancelled: "CANCELED_STATE", closed: "CLOSED_STATE" } as const

  // Each handler takes exactly one argument: the generated processor then treats it as promise-returning.
  const handler = {
    OpenSession: (req: any) => {
      seen.sessions.push({ catalog: req.initialNamespace?.catalogName, schema: req.initialNamespace?.schemaName })
      return new T.TOpenSessionResp({
        status: ok(),
        serverProtocolVersion: T.TProtocolVersion.SPARK_CLI_SERVICE_PROTOCOL_V8,
        sessionHandle: new T.TSessionHandle({ sessionId: handle() })
      })
    },
    CloseSession: (_req: any) => {
      seen.closedSessions++
      return new T.TCloseSessionResp({ status: ok() })
    },
    ExecuteStatement: (req: any) => {
      const id = handle()
      const queryTimeout = req.queryTimeout === undefined || req.queryTimeout === null ? 0 : new Int64(req.queryTimeout.buffer).toNumber()
      operations.set(id.guid.toString("hex"), { sql: req.statement, queryTimeout, cursor: 0, fetched: [], ...plan(req.statement) })
      return new T.TExecuteStatementResp({
        status: ok(),
        operationHandle: new T.TOperationHandle({ operationId: id, operationType: T.TOperationType.EXECUTE_STATEMENT, hasResultSet: true })
      })
    },
    GetOperationStatus: (req: any) => {
      const op = find(req)
      const failed = op.state === "error"
      return new T.TGetOperationStatusResp({
        status: ok(),
        operationState: T.TOperationState[STATES[op.state]],
        hasResultSet: true,
        ...(failed
          ? {
              sqlState: "42P01",
              errorMessage: "[TABLE_OR_VIEW_NOT_FOUND] The table or view `missing` cannot be found.",
              displayMessage: "[TABLE_OR_VIEW_NOT_FOUND] The table or view `missing` cannot be found."
            }
          : {})
      })
    },
    GetResultSetMetadata: (req: any) => {
      const op = find(req)
      const columns = op.columns.map(
        (c, i) =>
          new T.TColumnDesc({
            columnName: c.name,
            position: i + 1,
            typeDesc: new T.TTypeDesc({ types: [new T.TTypeEntry({ primitiveEntry: new T.TPrimitiveTypeEntry({ type: T.TTypeId[c.type] }) })] })
          })
      )
      return new T.TGetResultSetMetadataResp({ status: ok(), resultFormat: T.TSparkRowSetType.COLUMN_BASED_SET, schema: new T.TTableSchema({ columns }) })
    },
    FetchResults: (req: any) => {
      const op = find(req)
      const wanted = new Int64(req.maxRows.buffer).toNumber()
      op.fetched.push(wanted)
      const start = op.cursor
      const page = op.rows.slice(start, start + wanted)
      op.cursor += page.length
      return new T.TFetchResultsResp({
        status: ok(),
        hasMoreRows: op.cursor < op.rows.length,
        results: new T.TRowSet({ startRowOffset: new Int64(start), rows: [], columns: op.columns.map((c, j) => column(c.type, page.map((r) => r[j]!))) })
      })
    },
    CancelOperation: (req: any) => {
      find(req).state = "cancelled"
      return new T.TCancelOperationResp({ status: ok() })
    },
    CloseOperation: (req: any) => {
      const op = find(req)
      if (op.state !== "cancelled") op.state = "closed"
      return new T.TCloseOperationResp({ status: ok() })
    }
  }
  const processor = new Processor(handler)

  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      seen.requests++
      if (redirectTo !== undefined) return res.writeHead(307, { location: `${redirectTo}${req.url}` }).end()
      if (req.method !== "POST" || req.url !== HTTP_PATH) return res.writeHead(404).end()
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        seen.unauthorized++
        return res.writeHead(401, { "content-type": "text/plain" }).end("Invalid access token.")
      }
      TBufferedTransport.receiver((transport: unknown) => {
        const output = new TBufferedTransport(undefined, (reply: Buffer) => res.writeHead(200, { "content-type": "application/x-thrift" }).end(reply))
        processor.process(new TBinaryProtocol(transport), new TBinaryProtocol(output))
      })(Buffer.concat(chunks))
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, host, resolve)
  })
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    operations: () => [...operations.values()],
    close: () => new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections())
  }
}
type Fake = Awaited<ReturnType<typeof startFake>>

const connection = (extra: Partial<Databricks> = {}): Databricks => ({
  name: "dbx",
  db_type: "databricks",
  host: "localhost",
  http_path: HTTP_PATH,
  access_token: TOKEN,
  ...extra
})

/** Opens the connector in this process (which does not trust the test CA) and pings. */
const pingHere = (c: Databricks, port: number) =>
  Effect.runPromise(
    Effect.either(
      Effect.scoped(
        Effect.flatMap(
          DatabricksConnector.open({ connection: c, endpoint: { host: "127.0.0.1", port }, connectTimeoutMs: 5000, scrub: makeScrubber([TOKEN]) }),
          (pool) => pool.ping
        )
      )
    )
  )

const failureOf = (result: Either.Either<unknown, ConnectorError>) => {
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left
}

// Node reads NODE_EXTRA_CA_CERTS only at start, so statements run in a child that trusts the test CA the way a deployment trusts its own.
const SCENARIOS = `
import { Effect, Either } from "effect"
import { DatabricksConnector } from "./layers/connectors/Databricks.ts"
import { makeScrubber } from "./layers/connectors/DriverErrors.ts"
const { connection, endpoint, secrets } = JSON.parse(process.env.SLUICE_SCENARIO)
const open = (c) => DatabricksConnector.open({ connection: c, endpoint, connectTimeoutMs: 5000, scrub: makeScrubber(secrets) })
const attempt = (effect) => Effect.either(effect).pipe(Effect.map((e) => Either.isRight(e) ? { value: e.right } : { error: { tag: e.left._tag, step: e.left.step, message: e.left.message } }))
const options = (timeoutMs, maxRows) => ({ timeoutMs, maxRows })
const program = Effect.gen(function* () {
  const out = {}
  out.wrongToken = yield* attempt(Effect.scoped(Effect.flatMap(open({ ...connection, access_token: "wrong-" + secrets[0] }), (pool) => pool.ping)))
  yield* Effect.scoped(Effect.gen(function* () {
    const pool = yield* open(connection)
    out.capped = yield* attempt(pool.query("select id from numbers", options(5000, 10)))
    out.complete = yield* attempt(pool.query("select id from numbers", options(5000, 100)))
    out.probe = yield* attempt(pool.query(DatabricksConnector.privilegesProbe, options(5000, 1)))
    out.missing = yield* attempt(pool.query("select * from missing", options(5000, 10)))
    out.slow = yield* attempt(pool.query("select sleep(30)", options(300, 1)))
    out.interrupted = yield* attempt(pool.query("select sleep(31)", options(60000, 1)).pipe(Effect.timeout("300 millis")))
    out.stats = pool.stats()
  }))
  return out
})
process.stdout.write(JSON.stringify(await Effect.runPromise(program)))
`

// A ping alone, in a child that trusts the test CA.
const PING = `
import { Effect, Either } from "effect"
import { DatabricksConnector } from "./layers/connectors/Databricks.ts"
import { makeScrubber } from "./layers/connectors/DriverErrors.ts"
const { connection, endpoint, secrets } = JSON.parse(process.env.SLUICE_SCENARIO)
const ping = Effect.scoped(Effect.flatMap(DatabricksConnector.open({ connection, endpoint, connectTimeoutMs: 5000, scrub: makeScrubber(secrets) }), (pool) => pool.ping))
const result = await Effect.runPromise(Effect.either(ping))
process.stdout.write(JSON.stringify(Either.isRight(result) ? { ok: true } : { error: { step: result.left.step, message: result.left.message } }))
`

const runScenarios = (ca: string, port: number, script = SCENARIOS) =>
  new Promise<Record<string, any>>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "--eval", script], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        NODE_EXTRA_CA_CERTS: ca,
        SLUICE_SCENARIO: JSON.stringify({ connection: connection({ catalog: "main", schema_name: "sales" }), endpoint: { host: "127.0.0.1", port }, secrets: [TOKEN] })
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`scenarios exited ${code}: ${stderr}`))))
  })

describe("databricks driver configuration", () => {
  it("dials the endpoint with the http path and token, and maps catalog and schema to the session", () => {
    const config = driverConfig(connection({ catalog: "main", schema_name: "sales" }), { host: "127.0.0.1", port: 8443 }, 7000)
    expect(config.connect).toMatchObject({
      host: "127.0.0.1",
      port: 8443,
      path: HTTP_PATH,
      authType: "access-token",
      token: TOKEN,
      telemetryEnabled: false,
      retriesTimeout: 7000
    })
    expect(config.session).toEqual({ initialCatalog: "main", initialSchema: "sales" })
    expect(config.serverName).toBe("localhost")
    expect(driverConfig(connection(), { host: "h", port: 443 }, 1000).session).toEqual({})
  })

  it("takes the workspace host as pasted, and dials 443", () => {
    const pasted = connection({ host: "https://adb-123.4.azuredatabricks.net/" })
    expect(DatabricksConnector.address(pasted)).toEqual({ host: "adb-123.4.azuredatabricks.net", port: 443 })
    expect(driverConfig(pasted, DatabricksConnector.address(pasted)!, 1000).serverName).toBe("adb-123.4.azuredatabricks.net")
  })

  it("says there is no read-only session and that no live workspace was used", () => {
    expect(DatabricksConnector.capabilities.read_only_guard).toMatch(/no read-only session/)
    expect(DatabricksConnector.capabilities.verified_against).toMatch(/^not verified against a live server/)
  })
})

describe("databricks through the real driver against a Thrift fake over HTTPS", () => {
  let dir: string
  let certs: ReturnType<typeof makeCertificates>
  let fake: Fake

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-dbx-"))
    certs = makeCertificates(dir, ["127.0.0.1"])
    fake = await startFake(certs)
  })
  afterAll(async () => {
    await fake?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("refuses a certificate it cannot verify before the token leaves (the driver alone would accept it)", async () => {
    const before = fake.seen.requests
    const error = failureOf(await pingHere(connection(), fake.port))
    expect(error.step).toBe("tls")
    expect(error.message).not.toContain(TOKEN)
    expect(fake.seen.requests).toBe(before)
  })

  it("a redirect is not followed: the workspace it points to is never asked", async () => {
    const hostile = await startFake(certs, "127.0.0.1", 0, `https://127.0.0.1:${fake.port}`)
    try {
      const before = fake.seen.requests
      const out = await runScenarios(certs.ca, hostile.port, PING)
      expect(out).toMatchObject({ error: { step: expect.any(String) } })
      expect(hostile.seen.requests).toBeGreaterThanOrEqual(1)
      expect(fake.seen.requests).toBe(before)
    } finally {
      await hostile.close()
    }
  })

  it("a closed port is tcp and an unknown host dns", async () => {
    expect(failureOf(await pingHere(connection(), 1)).step).toBe("tcp")
    const unresolved = await Effect.runPromise(
      Effect.either(
        Effect.scoped(
          DatabricksConnector.open({
            connection: connection({ host: "no-such-host.invalid" }),
            endpoint: { host: "no-such-host.invalid", port: 443 },
            connectTimeoutMs: 5000,
            scrub: makeScrubber([TOKEN])
          })
        )
      )
    )
    expect(failureOf(unresolved).step).toBe("dns")
  })

  it("with the CA trusted: rows and types, the cap, errors, a timeout cancelled on the warehouse, a wrong token refused", async () => {
    const out = await runScenarios(certs.ca, fake.port)

    expect(out["wrongToken"].error).toMatchObject({ step: "auth" })
    expect(out["wrongToken"].error.message).not.toContain(TOKEN)
    expect(fake.seen.unauthorized).toBeGreaterThanOrEqual(1)
    expect(fake.seen.sessions).toEqual([{ catalog: "main", schema: "sales" }])

    expect(out["capped"].value).toEqual({ columns: [{ name: "id", type: "int" }], rows: Array.from({ length: 10 }, (_, i) => [i + 1]), truncated: true })
    expect(out["complete"].value.rows).toHaveLength(25)
    expect(out["complete"].value.truncated).toBe(false)
    // Column-based results (what the fake sends) give BIGINT as a number in this driver; Arrow results keep it exact.
    expect(out["probe"].value).toEqual({ columns: [{ name: "readable_tables", type: "bigint" }], rows: [[3]], truncated: false })
    expect(out["missing"].error).toMatchObject({ step: "query" })
    expect(out["missing"].error.message).toMatch(/TABLE_OR_VIEW_NOT_FOUND/)
    expect(out["slow"].error).toMatchObject({ step: "timeout" })
    expect(out["interrupted"].error).toMatchObject({ tag: "TimeoutException" })

    const ops = fake.operations()
    const numbers = ops.filter((op) => op.sql === "select id from numbers")
    // The capped read asked for no more than the cap and the one extra row.
    expect(numbers[0]!.fetched.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(11)
    expect(ops.find((op) => op.sql === "select sleep(30)")).toMatchObject({ state: "cancelled", queryTimeout: 1 })
    expect(ops.find((op) => op.sql === "select sleep(31)")).toMatchObject({ state: "cancelled" })
    expect(ops.filter((op) => op.state === "running")).toEqual([])
    expect(fake.seen.closedSessions).toBe(1)
  })
})

const liveDatabricks = TEST_DATABRICKS_HOST && TEST_DATABRICKS_HTTP_PATH && TEST_DATABRICKS_TOKEN ? { host: TEST_DATABRICKS_HOST, http_path: TEST_DATABRICKS_HTTP_PATH, access_token: TEST_DATABRICKS_TOKEN } : null
if (liveDatabricks === null) console.warn("skipping the live Databricks suite: TEST_DATABRICKS_HOST, TEST_DATABRICKS_HTTP_PATH and TEST_DATABRICKS_TOKEN are not all set")

describe.skipIf(liveDatabricks === null)("databricks against a live SQL warehouse", () => {
  const live = () => connection({ ...liveDatabricks! })
  const withPool = <A>(c: Databricks, use: (pool: Effect.Effect.Success<ReturnType<typeof DatabricksConnector.open>>) => Effect.Effect<A, ConnectorError>) =>
    Effect.runPromise(
      Effect.either(
        Effect.scoped(
          Effect.flatMap(
            DatabricksConnector.open({ connection: c, endpoint: DatabricksConnector.address(c), connectTimeoutMs: 60_000, scrub: makeScrubber([c.access_token ?? ""]) }),
            use
          )
        )
      )
    )

  it("reads and caps rows, times out a long statement, refuses a wrong token", async () => {
    const result = await withPool(live(), (pool) =>
      Effect.all({
        capped: pool.query("select id from range(100)", { timeoutMs: 30_000, maxRows: 10 }),
        slow: Effect.either(pool.query("select count(*) from range(100000000000)", { timeoutMs: 2000, maxRows: 1 }))
      })
    )
    if (Either.isLeft(result)) throw new Error(result.left.message)
    expect(result.right.capped.rows).toHaveLength(10)
    expect(result.right.capped.truncated).toBe(true)
    expect(Either.getLeft(result.right.slow).pipe((e) => e._tag === "Some" && e.value.step)).toBe("timeout")
    const refused = failureOf(await withPool({ ...live(), access_token: "dapi-wrong" }, (pool) => pool.ping))
    expect(refused.step).toBe("auth")
  })
})

describe("databricks over HTTP through a real gateway", () => {
  // The connection has no port (Databricks is on 443), so the fake takes 443 on an address of its own in 127/8.
  const address = `127.${(process.pid % 200) + 20}.${Math.floor(Math.random() * 250) + 1}.${Math.floor(Math.random() * 250) + 1}`
  let dir: string
  let fake: Fake | null = null
  let gateway: Gateway
  let key: string

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-dbx-http-"))
    const certs = makeCertificates(dir, [address])
    try {
      fake = await startFake(certs, address, 443)
    } catch (error) {
      const reason = `cannot listen on ${address}:443 (${(error as Error).message})`
      if (process.env["CI"] === "true") throw new Error(reason)
      console.warn(`skipping the databricks HTTP test: ${reason}`)
      return
    }
    gateway = await startGateway({ env: { NODE_EXTRA_CA_CERTS: certs.ca } })
    key = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
    await fake?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const api = (route: string, body?: unknown) => request(gateway.url, route, { key, method: "POST", ...(body !== undefined ? { body } : {}) })

  it("test and diagnose pass against the fake warehouse, and a wrong token fails at auth", async ({ skip }) => {
    if (fake === null) return skip()
    expect((await api("/api/connections", connection({ name: "dbx_ok", host: address, catalog: "main", schema_name: "sales" }))).status).toBe(201)
    const tested = await api("/api/connections/dbx_ok/test")
    expect(tested.json).toMatchObject({ ok: true })
    expect(tested.json.latency_ms).toBeGreaterThan(0)
    const diagnosed = await api("/api/connections/dbx_ok/diagnose")
    expect(diagnosed.json.ok).toBe(true)
    const steps = diagnosed.json.steps.map((s: { step: string; status: string }) => `${s.step}:${s.status}`)
    expect(steps).toEqual(expect.arrayContaining(["dns:ok", "tcp:ok", "tls:ok", "auth:ok", "privileges:ok"]))
    expect(diagnosed.json.steps.at(-1).detail).toMatch(/^3 readable tables/)
    expect(fake.seen.sessions).toContainEqual({ catalog: "main", schema: "sales" })

    expect((await api("/api/connections", connection({ name: "dbx_bad", host: address, access_token: `${TOKEN}-old` }))).status).toBe(201)
    const refused = await api("/api/connections/dbx_bad/test")
    expect(refused.json).toMatchObject({ ok: false, step: "auth" })
    expect(refused.text).not.toContain(TOKEN)
    const refusedDiagnosis = await api("/api/connections/dbx_bad/diagnose")
    expect(refusedDiagnosis.json.steps.at(-1)).toMatchObject({ step: "auth", status: "failed" })
  })
})
