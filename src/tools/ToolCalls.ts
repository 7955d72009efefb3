import { Cause, Effect, Either, Exit, Option, ParseResult, Schema, type Scope } from "effect"
import type { DbType } from "../domain/Connection"
import type { Principal } from "../domain/Principal"
import { redactSqlLiterals } from "../governance/RedactSql"
import { Gate } from "../gate/Gate"
import type { ChildQuery } from "../gate/RequestState"
import { Connections } from "../services/Connections"
import type { ToolDefinition, ToolCall, ToolFailure, ToolOutput } from "./ToolDefinition"

const MAX_AUDITED_ARGUMENTS = 2000

// Names and settings a tool takes; any other text (a LIKE pattern, a search, a question) may carry customer values.
const AUDITED_AS_GIVEN: ReadonlySet<string> = new Set([
  "connection_name", "table_name", "column", "columns", "from_table", "to_table", "schema", "session", "format"
])

/**
 * A tool call's arguments as its audit row keeps them (readable by any read key): SQL with its
 * literals redacted as for query rows, numbers and (once decoded) names as given, other text
 * reduced to its length.
 */
const auditedArguments = (args: Record<string, unknown>, dialect: DbType | null, decoded: boolean) =>
  JSON.stringify(
    Object.fromEntries(
      Object.entries(args).map(([key, value]) => [
        key,
        key === "sql" && typeof value === "string"
          ? redactSqlLiterals(value, dialect)
          : (decoded && AUDITED_AS_GIVEN.has(key)) || typeof value === "number" || typeof value === "boolean" || value === null
            ? value
            : `[${typeof value === "string" ? `${value.length} characters` : typeof value} not kept]`
      ])
    )
  ).slice(0, MAX_AUDITED_ARGUMENTS)

const decodeFailure = (error: ParseResult.ParseError): ToolFailure => ({
  code: "invalid_arguments",
  message: ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((i) => (i.path.length > 0 ? `${i.path.join(".")}: ${i.message}` : i.message))
    .join("; ")
})

/** What a tool call learns for its audit row (an MCP request's own state, or an agent step's record). */
export interface ToolCallRecord {
  readonly requestId: string
  connection: string | null
  dialect: DbType | null | undefined
  sql: string | null
  details: Record<string, unknown> | null
  readonly childQueries: Map<string, ChildQuery>
  outcome: "refused" | "error" | null
}

const REFUSALS: ReadonlySet<string> = new Set(["query_blocked", "insufficient_scope", "rate_limited", "budget_exhausted"])

/**
 * One call of a tool of the MCP tool table, as every caller makes it (an MCP client, the built-in
 * agent): the tool's scope and the caller's limits checked, the arguments decoded by the tool's
 * schema, the tool run, and what the audit row needs written into `record`.
 */
export class ToolCalls extends Effect.Service<ToolCalls>()("sluice/ToolCalls", {
  effect: Effect.gen(function* () {
    const gate = yield* Gate
    const connections = yield* Connections

    const call = (
      record: ToolCallRecord,
      principal: Principal,
      tool: ToolDefinition,
      args: unknown,
      caller: ToolCall["caller"] = "client"
    ): Effect.Effect<Either.Either<ToolOutput, ToolFailure>, never, Scope.Scope> =>
      Effect.gen(function* () {
        const input = typeof args === "object" && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {}
        // Until the arguments decode, nothing of them is trusted: the row gets them redacted under every dialect's rules.
        record.details = { ...record.details, tool: tool.name, arguments: auditedArguments(input, null, false) }
        const outcome = yield* Effect.exit(
          Effect.gen(function* () {
            // The tool's scope and the caller's limits, as REST's endpoints get them, before its arguments are looked at.
            yield* gate.authorize(principal, tool.scope, `The ${tool.name} tool`, true).pipe(
              Effect.mapError((e): ToolFailure => ({ code: e.code, message: "retry_after_seconds" in e ? `${e.message}; retry in ${e.retry_after_seconds} s` : e.message, atGate: true }))
            )
            // The same schemas as REST decode the arguments before anything runs or is taken from them.
            const decoded = yield* Effect.mapError(Schema.decodeUnknown(tool.input)(args ?? {}), decodeFailure)
            const named = decoded as { readonly connection_name?: unknown; readonly sql?: unknown }
            if (typeof named.connection_name === "string") record.connection = named.connection_name
            if (typeof named.sql === "string") record.sql = named.sql
            if (record.connection !== null) record.dialect = yield* connections.dialectIn(principal.orgId, record.connection)
            record.details = { ...record.details, tool: tool.name, arguments: auditedArguments(decoded as Record<string, unknown>, record.dialect ?? null, true) }
            return yield* tool.run(decoded, {
              principal,
              caller,
              requestId: record.requestId,
              // The last facts each governed query reported (a tool may run several), each for its own audit row.
              report: (facts, sql) =>
                Effect.sync(() => record.childQueries.set(facts.query_id, { facts, sql: sql ?? record.sql, parent: { tool: tool.name, request_id: record.requestId } }))
            })
          })
        )
        if (Exit.isSuccess(outcome)) return Either.right(outcome.value)
        const failure = Cause.failureOption(outcome.cause)
        const reported = Option.getOrElse(failure, (): ToolFailure => ({ code: "internal_error", message: "The tool failed; the gateway's log has the details" }))
        if (Option.isNone(failure)) yield* Effect.logError("tool call failed", outcome.cause)
        record.outcome = REFUSALS.has(reported.code) ? "refused" : "error"
        record.details = { ...record.details, error_code: reported.code }
        return Either.left(reported)
      })

    return { call } as const
  }),
  dependencies: [Connections.Default, Gate.Default]
}) {}
