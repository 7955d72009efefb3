import { Effect, Schema } from "effect"
import { ConnectionName, DbType } from "../domain/Connection"
import { ExplainResponse, QueryRequest, QueryResponse, ROW_LIMITS } from "../domain/Query"
import { Connections } from "../services/Connections"
import { Queries } from "../services/Queries"
import { type McpTool, READ_ONLY, type ToolFailure } from "./McpTool"
import { resultText } from "./ResultText"

const RowLimit = Schema.Int.pipe(
  Schema.between(1, ROW_LIMITS.mcp.max, { message: () => `row_limit must be an integer between 1 and ${ROW_LIMITS.mcp.max}` })
)

const QueryInput = Schema.Struct({
  connection_name: ConnectionName.annotations({ description: "The connection to query, as list_connections names it" }),
  sql: QueryRequest.fields.sql.annotations({ description: "One read-only statement (SELECT, WITH … SELECT, EXPLAIN, SHOW) in the connection's dialect" }),
  row_limit: Schema.optionalWith(RowLimit.annotations({ description: "At most this many rows come back (default 1000)" }), { exact: true }),
  timeout_seconds: QueryRequest.fields.timeout_seconds,
  session: QueryRequest.fields.session
}).annotations({ parseOptions: { onExcessProperty: "error" } })

const NoArguments = Schema.Struct({}).annotations({
  jsonSchema: { type: "object", properties: {}, additionalProperties: false },
  parseOptions: { onExcessProperty: "error" }
})

const ListedConnection = Schema.Struct({
  name: Schema.String,
  db_type: DbType,
  description: Schema.NullOr(Schema.String),
  tags: Schema.Array(Schema.String),
  database: Schema.NullOr(Schema.String)
})

/** Any service error of ours carries a code and a message already fit for a caller. */
const asFailure = (error: { readonly code: string; readonly message: string }): ToolFailure => ({ code: error.code, message: error.message })

/**
 * The MCP tool catalogue: each tool with the scope a key needs for it, its schemas and annotations,
 * and its implementation over the same services as REST (every row through the governed executor).
 */
export class McpTools extends Effect.Service<McpTools>()("sluice/McpTools", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections
    const queries = yield* Queries

    const listConnections: McpTool<{}> = {
      name: "list_connections",
      scope: "read",
      title: "List connections",
      description:
        "Lists the databases this key can query: each connection's name (pass it as connection_name to the other tools), its SQL dialect (db_type), description, tags and database. Start here.",
      input: NoArguments,
      output: Schema.Struct({ connections: Schema.Array(ListedConnection) }),
      annotations: READ_ONLY,
      run: (_, call) =>
        Effect.gen(function* () {
          const page = yield* connections.list(call.principal, { limit: 1000 })
          const listed = page.items.map((c) => ({
            name: c.name,
            db_type: c.db_type,
            description: c.description,
            tags: c.tags,
            database: c.database ?? null
          }))
          const text =
            listed.length === 0
              ? "No connections yet: an admin adds them in the web app or with POST /api/connections."
              : listed.map((c) => `- ${c.name} (${c.db_type})${c.description ? `: ${c.description}` : ""}`).join("\n")
          return { text, structured: { connections: listed } }
        }).pipe(Effect.mapError(asFailure))
    }

    const queryDatabase: McpTool<typeof QueryInput.Type> = {
      name: "query_database",
      scope: "query",
      title: "Query a database (read-only)",
      description: [
        "Runs one read-only SQL statement on a connection and returns its rows.",
        "Writes, DDL, several statements and side-effecting functions are refused; tables an admin blocked are refused; PII columns come back masked.",
        "At most row_limit rows (default 1000, max 10000) come back, and the result says whether more exist (completeness: truncated).",
        "Prefer aggregates and WHERE clauses to reading whole tables; use explain_query first for statements that may be expensive."
      ].join(" "),
      input: QueryInput,
      output: QueryResponse,
      annotations: READ_ONLY,
      run: (args, call) =>
        Effect.map(
          queries.run(call.principal, args, { surface: "mcp", requestId: call.requestId, report: call.report }),
          (result) => ({ text: resultText(result), structured: result })
        ).pipe(Effect.mapError(asFailure))
    }

    const explainQuery: McpTool<Omit<typeof QueryInput.Type, "session">> = {
      name: "explain_query",
      scope: "query",
      title: "Explain a query without running it",
      description:
        "Shows the database's plan for a read-only statement without running it: estimated rows and cost, tables read, and warnings such as a full scan of a large table. The statement passes the same checks as query_database.",
      input: QueryInput.omit("session"),
      output: ExplainResponse,
      annotations: READ_ONLY,
      run: (args, call) =>
        Effect.map(queries.explain(call.principal, args, { surface: "mcp", requestId: call.requestId, report: call.report }), (plan) => ({
          text: [
            `Plan for: ${plan.sql}`,
            `Estimated rows: ${plan.estimated_rows ?? "unknown"}; estimated cost: ${plan.estimated_cost ?? "unknown"}${plan.estimated_bytes !== null ? `; bytes scanned: ${plan.estimated_bytes}` : ""}`,
            ...plan.warnings.map((w) => `Warning: ${w}`),
            typeof plan.plan === "string" ? plan.plan : JSON.stringify(plan.plan, null, 1).slice(0, 8000)
          ].join("\n"),
          structured: plan
        })).pipe(Effect.mapError(asFailure))
    }

    const tools: ReadonlyArray<McpTool> = [listConnections, queryDatabase, explainQuery]
    return { tools, byName: new Map(tools.map((t) => [t.name, t])) } as const
  })
}) {}

