import { randomUUID } from "node:crypto"
import type * as http from "node:http"
import { clickhouseColumns, clickhouseKeys, clickhouseRelations, COLUMN_COLUMNS, RELATION_COLUMNS } from "./FakeCatalog"
import { listenFake } from "./FakeServer"

/**
 * A stand-in for ClickHouse's HTTP interface (port 8123), enough for @clickhouse/client: /ping, queries by
 * POST body or GET `query`, settings as URL parameters, basic or X-ClickHouse-User/Key auth, the
 * JSONCompactEachRow(WithNamesAndTypes) formats, `readonly` refusing writes with Code 164 as the real
 * server does, a `sleep` query that runs until KILL QUERY (or max_execution_time) stops it, and
 * `numbers(N)` streamed with back-pressure so a reader that stops early is visible. system.tables and
 * system.columns, as a schema scan reads them, answer with FakeCatalog.ts's catalog for the current database.
 */
export interface ReceivedQuery {
  readonly method: string
  readonly queryId: string
  readonly user: string
  readonly database: string
  readonly query: string
  readonly settings: Readonly<Record<string, string>>
}

export interface ClickhouseFake {
  readonly port: number
  readonly queries: Array<ReceivedQuery>
  /** query_ids named by KILL QUERY requests. */
  readonly killed: Array<string>
  /** Write statements the fake accepted (only possible without readonly). */
  readonly writes: Array<string>
  /** Streamed results whose client closed the response before the last row: how many rows had been sent. */
  readonly abandoned: Map<string, number>
  /** query_ids of sleep queries still running. */
  readonly running: () => Array<string>
  readonly close: () => Promise<void>
}

export interface ClickhouseFakeOptions {
  /** user → password; defaults to `default` with no password. */
  readonly users?: Readonly<Record<string, string>>
  readonly databases?: ReadonlyArray<string>
  readonly tls?: { readonly key: string; readonly cert: string }
}

const VERSION = "24.8.4.13 (official build)"
const RESERVED = new Set(["query", "query_id", "database", "user", "password", "default_format", "session_id", "role"])
const WRITES = new Set(["INSERT", "CREATE", "DROP", "ALTER", "TRUNCATE", "RENAME", "OPTIMIZE", "SYSTEM", "SET", "GRANT", "REVOKE", "DELETE", "UPDATE", "ATTACH", "DETACH", "EXCHANGE", "BACKUP", "RESTORE"])
const READS = new Set(["SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "EXISTS"])

type Table = { readonly names: Array<string>; readonly types: Array<string>; readonly rows: () => Iterable<Array<unknown>> }

export const startClickhouseFake = async (options: ClickhouseFakeOptions = {}): Promise<ClickhouseFake> => {
  const users = options.users ?? { default: "" }
  const databases = options.databases ?? ["default", "system"]
  const queries: Array<ReceivedQuery> = []
  const killed: Array<string> = []
  const writes: Array<string> = []
  const abandoned = new Map<string, number>()
  const running = new Map<string, () => void>()

  const fail = (res: http.ServerResponse, status: number, code: number, type: string, message: string) => {
    if (res.headersSent || res.destroyed) return
    res.writeHead(status, { "Content-Type": "text/plain; charset=UTF-8", "X-ClickHouse-Exception-Code": String(code) })
    res.end(`Code: ${code}. DB::Exception: ${message}. (${type}) (version ${VERSION})\n`)
  }

  const credentials = (req: http.IncomingMessage, params: URLSearchParams) => {
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? "")
    if (basic) {
      const decoded = Buffer.from(basic[1]!, "base64").toString("utf8")
      const colon = decoded.indexOf(":")
      return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
    }
    const header = (name: string) => (typeof req.headers[name] === "string" ? (req.headers[name] as string) : undefined)
    return {
      user: header("x-clickhouse-user") ?? params.get("user") ?? "default",
      password: header("x-clickhouse-key") ?? params.get("password") ?? ""
    }
  }

  const table = (sql: string, database: string): Table | undefined => {
    if (/^select\s+1\s*$/i.test(sql)) return { names: ["1"], types: ["UInt8"], rows: () => [[1]] }
    // The scan's catalog reads; the privileges probe also reads system.tables, but not is_temporary.
    const inDatabase = (rows: Array<Array<unknown>>) => () => rows.filter((row) => row[0] === database)
    if (/\bsystem\.tables\b/i.test(sql) && /\bis_temporary\b/i.test(sql)) {
      return {
        names: RELATION_COLUMNS,
        types: ["String", "String", "String", "Nullable(String)", "Nullable(UInt64)", "Nullable(UInt64)", "Nullable(String)", "Nullable(String)", "String", "String", "Nullable(Nothing)"],
        rows: inDatabase(clickhouseRelations())
      }
    }
    if (/\bsystem\.columns\b/i.test(sql)) {
      return {
        names: COLUMN_COLUMNS,
        types: ["String", "String", "String", "String", "UInt8", "Nullable(String)", "Nullable(String)", "UInt8", "Nullable(Nothing)", "Nullable(Nothing)"],
        rows: inDatabase(clickhouseColumns())
      }
    }
    if (/\bsystem\.tables\b/i.test(sql) && /\bprimary_key\s*!=/i.test(sql)) {
      return {
        names: ["schema", "table", "name", "kind", "columns", "ref_schema", "ref_table", "ref_columns"],
        types: ["String", "String", "String", "String", "String", "Nullable(Nothing)", "Nullable(Nothing)", "Nullable(Nothing)"],
        rows: inDatabase(clickhouseKeys())
      }
    }
    if (/\bsystem\.tables\b/i.test(sql)) return { names: ["readable_tables"], types: ["UInt64"], rows: () => [["3"]] }
    if (/\bfrom\s+events\b/i.test(sql)) {
      const rows = [[1, "signup", "2024-01-01 10:00:00"], [2, "login", "2024-01-02 11:30:00"]]
      return { names: ["id", "name", "at"], types: ["UInt32", "String", "DateTime"], rows: () => rows }
    }
    const numbers = /\bfrom\s+(?:system\.)?numbers\((\d+)\)/i.exec(sql)
    if (numbers === null) return undefined
    const n = Number(numbers[1])
    return {
      names: ["number"],
      types: ["UInt64"],
      rows: function* () {
        for (let i = 0; i < n; i++) yield [String(i)]
      }
    }
  }

  /** Writes rows in the chosen format, waiting for the client to drain its socket as a real server must. */
  const stream = async (res: http.ServerResponse, queryId: string, format: string, result: Table) => {
    res.writeHead(200, {
      "Content-Type": "application/x-ndjson; charset=UTF-8",
      "X-ClickHouse-Query-Id": queryId,
      "X-ClickHouse-Format": format,
      "X-ClickHouse-Summary": JSON.stringify({ read_rows: "0", read_bytes: "0", written_rows: "0", written_bytes: "0" })
    })
    const line = (values: Array<unknown>) => (format.startsWith("JSON") ? JSON.stringify(values) : values.join("\t")) + "\n"
    if (format === "JSONCompactEachRowWithNamesAndTypes") res.write(line(result.names) + line(result.types))
    let sent = 0
    let buffer = ""
    for (const row of result.rows()) {
      buffer += line(row)
      sent++
      if (sent % 1000 !== 0) continue
      const drained = res.write(buffer)
      buffer = ""
      if (!drained) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off("drain", done).off("close", done)
            resolve()
          }
          res.on("drain", done).on("close", done)
        })
      }
      if (res.destroyed) {
        abandoned.set(queryId, sent)
        return
      }
    }
    res.end(buffer)
  }

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://fake")
    if (url.pathname === "/ping") {
      res.writeHead(200, { "Content-Type": "text/html; charset=UTF-8" }).end("Ok.\n")
      return
    }
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const params = url.searchParams
    const { user, password } = credentials(req, params)
    if (users[user] === undefined || users[user] !== password) {
      return fail(res, 403, 516, "AUTHENTICATION_FAILED", `${user}: Authentication failed: password is incorrect, or there is no user with such name`)
    }
    const database = params.get("database") ?? "default"
    if (!databases.includes(database)) return fail(res, 404, 81, "UNKNOWN_DATABASE", `Database ${database} does not exist`)
    const text = [params.get("query"), Buffer.concat(chunks).toString("utf8")].filter((s) => s).join("\n")
    const settings = Object.fromEntries([...params].filter(([k]) => !RESERVED.has(k)))
    const queryId = params.get("query_id") ?? randomUUID()
    queries.push({ method: req.method ?? "", queryId, user, database, query: text, settings })

    const formatClause = /\s+FORMAT\s+(\w+)\s*;?\s*$/i.exec(text)
    const format = formatClause?.[1] ?? params.get("default_format") ?? "TabSeparated"
    const sql = (formatClause ? text.slice(0, formatClause.index) : text)
      .replace(/\/\*[\s\S]*?\*\//g, " ")
      .replace(/--[^\n]*/g, " ")
      .trim()
      .replace(/;\s*$/, "")
    // A GET request is read-only on a real server, whatever its settings say.
    const readonly = req.method === "GET" ? "2" : settings["readonly"] ?? "0"
    const keyword = (/^\w+/.exec(sql)?.[0] ?? "").toUpperCase()

    if (sql.includes(";")) return fail(res, 500, 62, "SYNTAX_ERROR", "Syntax error (Multi-statements are not allowed): failed at position 1")
    if (keyword === "KILL") {
      if (readonly !== "0") return fail(res, 500, 164, "READONLY", `${user}: Cannot execute query in readonly mode`)
      const target = /query_id\s*=\s*'([^']*)'/i.exec(sql)?.[1]
      if (target !== undefined) {
        killed.push(target)
        running.get(target)?.()
      }
      res.writeHead(200, { "X-ClickHouse-Query-Id": queryId }).end(target !== undefined ? `waiting\t${target}\t${user}\t\n` : "")
      return
    }
    if (WRITES.has(keyword)) {
      if (readonly !== "0") return fail(res, 500, 164, "READONLY", `${user}: Cannot execute query in readonly mode`)
      writes.push(sql)
      res.writeHead(200, { "X-ClickHouse-Query-Id": queryId }).end("")
      return
    }
    if (!READS.has(keyword)) return fail(res, 500, 62, "SYNTAX_ERROR", `Syntax error: failed at position 1 ('${keyword}')`)

    if (/\bsleep(EachRow)?\s*\(/i.test(sql)) {
      // Like a real server, a query producing no output keeps running after its client leaves,
      // unless cancel_http_readonly_queries_on_client_close asks for it to be stopped.
      const limitSeconds = Number(settings["max_execution_time"] ?? 0)
      let limit: NodeJS.Timeout | undefined
      const stop = (code: number, type: string, message: string) => {
        clearTimeout(limit)
        running.delete(queryId)
        fail(res, 500, code, type, message)
      }
      if (limitSeconds > 0) {
        limit = setTimeout(
          () => stop(159, "TIMEOUT_EXCEEDED", `Timeout exceeded: elapsed ${limitSeconds} seconds, maximum: ${limitSeconds}`),
          limitSeconds * 1000
        )
      }
      running.set(queryId, () => stop(394, "QUERY_WAS_CANCELLED", "Query was cancelled"))
      res.on("close", () => {
        if (settings["cancel_http_readonly_queries_on_client_close"] === "1") stop(394, "QUERY_WAS_CANCELLED", "Query was cancelled")
      })
      return
    }
    const result = table(sql, database)
    if (result === undefined) return fail(res, 404, 60, "UNKNOWN_TABLE", `Unknown table expression identifier in scope ${sql.slice(0, 60)}`)
    await stream(res, queryId, format, result)
  }

  const { server, port } = await listenFake(handle, options.tls)

  return {
    port,
    queries,
    killed,
    writes,
    abandoned,
    running: () => [...running.keys()],
    close: () =>
      new Promise<void>((resolve) => {
        for (const stop of running.values()) stop()
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
