import { Effect, Schema } from "effect"
import { AuditEntry } from "../domain/Audit"
import { Budget, SessionName } from "../domain/Budget"
import type { Principal } from "../domain/Principal"
import { Audit } from "../services/Audit"
import { Budgets } from "../services/Budgets"
import { defineTool, READ_ONLY, type ToolDefinition } from "./ToolDefinition"
import { OneConnection } from "./ToolSchemas"

/** What a key may still spend, and what was run: budgets and the audit log. */
export const governanceTools = Effect.gen(function* () {
  const budgets = yield* Budgets
  const audit = yield* Audit

  /** The budgets a query by this key (and this session) would be charged to. */
  const budgetsOf = (principal: Principal, session: string | undefined) =>
    Effect.map(budgets.list(principal), ({ items }) =>
      items.filter((b) => (b.key_id !== null && b.key_id === principal.keyId) || (session !== undefined && b.session === session))
    )
  const budgetText = (items: ReadonlyArray<Budget>) =>
    items.length === 0
      ? "No budget applies: queries are limited only by row_limit, timeouts and rate limits."
      : items
          .map((b) => `- ${b.session !== null ? `session ${b.session}` : "this key"}: ${b.exhausted ? "SPENT" : "remaining"} ${JSON.stringify(b.remaining)}`)
          .join("\n")

  const checkBudget = defineTool({
    name: "check_budget",
    scope: "read",
    title: "Check the remaining budget",
    description:
      "Shows the budgets this key's queries are charged to (the key's own, and the named session's when given): what each allows, what is used and what remains in queries, rows, bytes scanned, cost and time. A spent budget refuses further queries.",
    input: Schema.Struct({ session: Schema.optionalWith(SessionName, { exact: true }) }).annotations({ parseOptions: { onExcessProperty: "error" } }),
    output: Schema.Struct({ budgets: Schema.Array(Budget) }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.map(budgetsOf(call.principal, args.session), (items) => ({ text: budgetText(items), structured: { budgets: items } }))
  })

  const HistoryInput = Schema.Struct({
    connection_name: OneConnection.fields.connection_name,
    limit: Schema.optionalWith(
      Schema.Int.pipe(Schema.between(1, 100, { message: () => "limit must be an integer between 1 and 100" })).annotations({ description: "The most recent queries to list (default 20)" }),
      { exact: true }
    )
  }).annotations({ parseOptions: { onExcessProperty: "error" } })
  const queryHistory = defineTool({
    name: "query_history",
    scope: "read",
    title: "Recent queries",
    description:
      "Lists recent governed queries in this organization from the audit log, newest first (up to 100): when, on which connection, the SQL with its literals redacted, whether it ran or was refused and why, rows and duration. Useful to reuse a query that worked.",
    input: HistoryInput,
    output: Schema.Struct({ queries: Schema.Array(AuditEntry.pick("timestamp", "connection", "sql", "outcome", "block_reason", "rows", "duration_ms")) }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const page = yield* audit.list(call.principal, { event_type: "query", connection: args.connection_name }, { limit: args.limit ?? 20 })
        const listed = page.items.map((e) => ({
          timestamp: e.timestamp,
          connection: e.connection,
          sql: e.sql,
          outcome: e.outcome,
          block_reason: e.block_reason,
          rows: e.rows,
          duration_ms: e.duration_ms
        }))
        const text =
          listed.length === 0
            ? "No queries yet."
            : listed
                .map((q) => `- ${new Date(q.timestamp * 1000).toISOString()} ${q.connection ?? "?"} ${q.outcome}${q.block_reason ? ` (${q.block_reason})` : ""}${q.rows !== null ? `, ${q.rows} rows` : ""}: ${q.sql ?? ""}`)
                .join("\n")
        return { text, structured: { queries: listed } }
      })
  })

  const tools: ReadonlyArray<ToolDefinition> = [checkBudget, queryHistory]
  return { tools, budgetsOf, budgetText }
})
