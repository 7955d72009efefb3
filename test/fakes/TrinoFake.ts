import type * as http from "node:http"
import { COLUMN_COLUMNS, factRows, informationSchemaColumns, informationSchemaRelations, RELATION_COLUMNS } from "./FakeCatalog"
import { listenFake } from "./FakeServer"

/**
 * A stand-in for a Trino coordinator's client REST protocol, enough for trino-client: POST /v1/statement
 * answers QUEUED with a nextUri; GETs on nextUri move the query to RUNNING and then serve `data` pages
 * (`pageSize` rows each) with `columns` and `stats.state`, ending FINISHED without a nextUri; failures
 * carry an `error` with errorName/errorType; DELETE on a nextUri (or /v1/query/{id}) cancels and is
 * recorded; with `users`, HTTP basic auth is required (401 otherwise), as Trino's password
 * authenticator does. `SELECT … FROM slow` keeps RUNNING until cancelled or past the
 * query_max_execution_time session property. The information_schema tables and columns answer with
 * the canned catalog of FakeCatalog.ts. `nextUriOrigin` and `redirectTo` make it a hostile server that
 * sends the client to another address.
 */
export interface TrinoStatement {
  readonly id: string
  readonly sql: string
  readonly user: string | undefined
  readonly source: string | undefined
  readonly catalog: string | undefined
  readonly schema: string | undefined
  readonly session: Readonly<Record<string, string>>
  pagesServed: number
}

export interface TrinoFake {
  readonly port: number
  readonly statements: Array<TrinoStatement>
  /** Ids of queries cancelled by a DELETE, in order. */
  readonly cancelled: Array<string>
  /** Ids of queries still queued or running. */
  readonly running: () => Array<string>
  readonly close: () => Promise<void>
}

export interface TrinoFakeOptions {
  /** user → password for basic auth; without it any X-Trino-User is accepted. */
  readonly users?: Readonly<Record<string, string>>
  readonly tls?: { readonly key: string; readonly cert: string }
  readonly pageSize?: number
  /** Hands out nextUris on this origin instead of its own, as a hostile server pointing the client elsewhere would. */
  readonly nextUriOrigin?: string
  /** Answers every GET on a nextUri with a 307 redirect to the same path on this origin. */
  readonly redirectTo?: string
}

interface Column {
  readonly name: string
  readonly type: string
}
interface TrinoError {
  readonly message: string
  readonly errorCode: number
  readonly errorName: string
  readonly errorType: string
}
type Outcome =
  | { readonly kind: "rows"; readonly columns: Array<Column>; readonly rows: Array<Array<unknown>> }
  | { readonly kind: "slow" }
  | { readonly kind: "error"; readonly error: TrinoError }

interface Query {
  readonly statement: TrinoStatement
  readonly outcome: Outcome
  readonly slug: string
  readonly startedAt: number
  readonly limitMs: number | null
  state: "QUEUED" | "RUNNING" | "FINISHED" | "FAILED"
  error: TrinoError | null
}

const syntaxError = (message: string): TrinoError => ({ message, errorCode: 1, errorName: "SYNTAX_ERROR", errorType: "USER_ERROR" })

const catalog = (names: Array<string>, rows: Array<Array<unknown>>): Outcome => ({ kind: "rows", columns: names.map((name) => ({ name, type: "varchar" })), rows })

const outcomeOf = (sql: string): Outcome => {
  if (/;\s*\S/.test(sql)) return { kind: "error", error: syntaxError("line 1:9: mismatched input ';'. Expecting: <EOF>") }
  if (/^select\s+1$/i.test(sql)) return { kind: "rows", columns: [{ name: "_col0", type: "integer" }], rows: [[1]] }
  if (/\bsystem\.jdbc\.tables\b/i.test(sql)) return { kind: "rows", columns: [{ name: "readable_tables", type: "bigint" }], rows: [[3]] }
  if (/\binformation_schema\.tables\b/i.test(sql)) return catalog(RELATION_COLUMNS, informationSchemaRelations("trino"))
  if (/\bsystem\.metadata\.table_comments\b/i.test(sql) && /\bcurrent_catalog\b/i.test(sql)) return catalog(["schema_name", "table_name", "fact", "comment"], factRows("comment"))
  if (/\binformation_schema\.columns\b/i.test(sql)) return catalog(COLUMN_COLUMNS, informationSchemaColumns("trino"))
  if (/\bfrom\s+slow\b/i.test(sql)) return { kind: "slow" }
  const sequence = /sequence\(\s*1\s*,\s*(\d+)\s*\)/i.exec(sql)
  if (sequence) {
    const n = Number(sequence[1])
    return { kind: "rows", columns: [{ name: "n", type: "bigint" }], rows: Array.from({ length: n }, (_, i) => [i + 1]) }
  }
  return {
    kind: "error",
    error: { message: "line 1:15: Table 'memory.default.unknown' does not exist", errorCode: 46, errorName: "TABLE_NOT_FOUND", errorType: "USER_ERROR" }
  }
}

const durationMs = (value: string | undefined): number | null => {
  const match = /^([\d.]+)\s*(ms|s|m|h)$/.exec(value ?? "")
  if (!match) return null
  return Number(match[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as "ms" | "s" | "m" | "h"]
}

const header = (req: http.IncomingMessage, name: string) => {
  const value = req.headers[name.toLowerCase()]
  return typeof value === "string" ? value : undefined
}

export const startTrinoFake = async (options: TrinoFakeOptions = {}): Promise<TrinoFake> => {
  const pageSize = options.pageSize ?? 10
  const statements: Array<TrinoStatement> = []
  const cancelled: Array<string> = []
  const queries = new Map<string, Query>()
  let counter = 0

  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(body))
  }

  const authenticated = (req: http.IncomingMessage) => {
    if (options.users === undefined) return header(req, "X-Trino-User") !== undefined
    const basic = /^Basic (.+)$/i.exec(header(req, "authorization") ?? "")
    if (!basic) return false
    const decoded = Buffer.from(basic[1]!, "base64").toString("utf8")
    const colon = decoded.indexOf(":")
    return options.users[decoded.slice(0, colon)] === decoded.slice(colon + 1)
  }

  /** The protocol's answer for a query at a point: queued, failed, still running, or a page of rows. */
  const page = (req: http.IncomingMessage, query: Query, phase: "queued" | "executing", token: number) => {
    const base = options.nextUriOrigin ?? `${options.tls ? "https" : "http"}://${req.headers.host}`
    const id = query.statement.id
    const infoUri = `${base}/ui/query.html?${id}`
    const stats = (state: Query["state"]) => ({ state, queued: state === "QUEUED", scheduled: state !== "QUEUED", nodes: 1 })
    const next = (nextPhase: string, t: number) => `${base}/v1/statement/${nextPhase}/${id}/${query.slug}/${t}`
    if (query.error !== null) {
      const failureInfo = { type: "io.trino.spi.TrinoException", message: query.error.message, suppressed: [], stack: [] }
      return { id, infoUri, stats: stats("FAILED"), error: { ...query.error, failureInfo } }
    }
    if (phase === "queued") return { id, infoUri, nextUri: next(query.state === "QUEUED" ? "queued" : "executing", token), stats: stats(query.state) }
    if (query.outcome.kind !== "rows") return { id, infoUri, nextUri: next("executing", token + 1), stats: stats(query.state) }
    const { columns, rows } = query.outcome
    const data = rows.slice(token * pageSize, (token + 1) * pageSize)
    const more = (token + 1) * pageSize < rows.length
    if (!more) query.state = "FINISHED"
    return {
      id,
      infoUri,
      columns,
      ...(data.length > 0 ? { data } : {}),
      ...(more ? { nextUri: next("executing", token + 1) } : {}),
      stats: stats(query.state)
    }
  }

  const cancel = (id: string) => {
    const query = queries.get(id)
    cancelled.push(id)
    if (query === undefined || query.state === "FINISHED" || query.state === "FAILED") return
    query.state = "FAILED"
    query.error = { message: "Query was canceled", errorCode: 3, errorName: "USER_CANCELED", errorType: "USER_ERROR" }
  }

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const url = new URL(req.url ?? "/", "http://fake")
    if (req.method === "GET" && url.pathname === "/v1/info") return json(res, 200, { nodeVersion: { version: "fake" }, coordinator: true, starting: false })
    if (!authenticated(req)) {
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="Trino"', "Content-Type": "text/plain" }).end("Unauthorized")
      return
    }

    if (req.method === "POST" && url.pathname === "/v1/statement") {
      const sql = Buffer.concat(chunks).toString("utf8")
      const session = Object.fromEntries(
        (header(req, "X-Trino-Session") ?? "")
          .split(",")
          .filter((pair) => pair.includes("="))
          .map((pair) => [pair.slice(0, pair.indexOf("=")).trim(), decodeURIComponent(pair.slice(pair.indexOf("=") + 1).trim())])
      )
      const statement: TrinoStatement = {
        id: `20240101_000000_${String(++counter).padStart(5, "0")}_fake0`,
        sql,
        user: header(req, "X-Trino-User"),
        source: header(req, "X-Trino-Source"),
        catalog: header(req, "X-Trino-Catalog"),
        schema: header(req, "X-Trino-Schema"),
        session,
        pagesServed: 0
      }
      statements.push(statement)
      const stripped = sql.replace(/\/\*[\s\S]*?\*\//g, " ").replace(/--[^\n]*/g, " ").trim()
      const query: Query = {
        statement,
        outcome: outcomeOf(stripped),
        slug: `y${counter}`,
        startedAt: Date.now(),
        limitMs: durationMs(session["query_max_execution_time"]),
        state: "QUEUED",
        error: null
      }
      queries.set(statement.id, query)
      return json(res, 200, page(req, query, "queued", 1))
    }

    if (options.redirectTo !== undefined && req.method === "GET") {
      res.writeHead(307, { Location: `${options.redirectTo}${url.pathname}` }).end()
      return
    }
    const route = /^\/v1\/statement\/(queued|executing)\/([^/]+)\/([^/]+)\/(\d+)$/.exec(url.pathname) ?? /^\/v1\/query\/([^/]+)$/.exec(url.pathname)
    if (route === null) return json(res, 404, { message: "Not found" })
    const id = route.length === 5 ? route[2]! : route[1]!
    const query = queries.get(id)
    if (req.method === "DELETE") {
      cancel(id)
      res.writeHead(204).end()
      return
    }
    if (req.method !== "GET" || query === undefined || route.length !== 5 || route[3] !== query.slug) {
      res.writeHead(404, { "Content-Type": "text/plain" }).end("Query not found")
      return
    }
    query.statement.pagesServed++
    const phase = route[1] as "queued" | "executing"
    const token = Number(route[4])
    if (query.state === "QUEUED") {
      if (query.outcome.kind === "error") {
        query.state = "FAILED"
        query.error = query.outcome.error
      } else query.state = "RUNNING"
      // Out of the queue, the client is sent to the first executing page.
      return json(res, 200, page(req, query, "queued", 0))
    }
    if (query.outcome.kind === "slow" && query.error === null) {
      // A long poll, as a coordinator holds a request until there is something to say.
      await new Promise((resolve) => setTimeout(resolve, 100))
      if (query.limitMs !== null && Date.now() - query.startedAt > query.limitMs && query.error === null) {
        query.state = "FAILED"
        query.error = {
          message: `Query exceeded the maximum execution time limit of ${query.limitMs}ms`,
          errorCode: 131075,
          errorName: "EXCEEDED_TIME_LIMIT",
          errorType: "INSUFFICIENT_RESOURCES"
        }
      }
    }
    return json(res, 200, page(req, query, phase, token))
  }

  const { server, port } = await listenFake(handle, options.tls)
  return {
    port,
    statements,
    cancelled,
    running: () => [...queries.values()].filter((q) => q.state === "QUEUED" || q.state === "RUNNING").map((q) => q.statement.id),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
