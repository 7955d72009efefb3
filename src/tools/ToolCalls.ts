import { Cause, Effect, Either, Exit, Option, ParseResult, Schema, type Scope } from "effect"
import type { DbType } from "../domain/Connection"
import type { Principal } from "../domain/Principal"
import { redactSqlLiterals } from "../governance/RedactSql"
import { Gate } from "../gate/Gate"
import type { AuditDraft } from "../services/AuditDraft"
import type { QueryFacts } from "../governance/GovernedExecutor"
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

const REFUSALS: ReadonlySet<string> = new Set(["query_blocked", "insufficient_scope", "rate_limited", "budget_exhausted", "unknown_tool", "proposal_limit"])

/** A tool call ended with `failure`: what its audit row says of it (a refusal's code is its block reason). */
const failed = (draft: AuditDraft, failure: ToolFailure): Either.Either<never, ToolFailure> => {
  draft.outcome = REFUSALS.has(failure.code) ? "refused" : "error"
  if (draft.outcome === "refused") draft.blockReason = failure.code
  draft.details = { ...draft.details, error_code: failure.code }
  return Either.left(failure)
}

// A tool's name as the caller gave it is kept when it is a name, not any text.
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,64}$/

/**
 * A call refused before any tool runs (no tool by that name for this caller, a run past its
 * proposals), written into `draft` as a refusal of the named tool.
 */
const refuse = (draft: AuditDraft, name: string, failure: ToolFailure): Either.Either<never, ToolFailure> => {
  draft.details = { ...draft.details, tool: TOOL_NAME.test(name) ? name : `[${name.length} characters not kept]` }
  return failed(draft, failure)
}

/** What a call's audit row says before its arguments decode: the tool, and its arguments redacted under every dialect's rules (nothing of them is trusted yet). */
export const callBegun = (draft: AuditDraft, tool: ToolDefinition, args: unknown) => {
  const input = typeof args === "object" && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {}
  draft.details = { ...draft.details, tool: tool.name, arguments: auditedArguments(input, null, false) }
}

/** Once its arguments decode: the connection and statement they name (the dialect found by the caller), and the arguments as its audit row keeps them. */
export const callDecoded = (draft: AuditDraft, tool: ToolDefinition, decoded: unknown, dialect: (connection: string) => DbType | null) => {
  const named = decoded as { readonly connection_name?: unknown; readonly sql?: unknown }
  if (typeof named.connection_name === "string") draft.connection = named.connection_name
  if (typeof named.sql === "string") draft.sql = named.sql
  if (draft.connection !== null) draft.dialect = dialect(draft.connection)
  draft.details = { ...draft.details, tool: tool.name, arguments: auditedArguments(decoded as Record<string, unknown>, draft.dialect ?? null, true) }
}

/** The sink for the facts of a tool's governed queries (a tool may run several): the last each reported, each for its own audit row under the call. */
export const childQueryReport = (draft: AuditDraft, tool: ToolDefinition) => (facts: QueryFacts, sql?: string | null, connection?: string) =>
  void draft.childQueries.set(facts.query_id, { facts, sql: sql ?? draft.sql, ...(connection === undefined ? {} : { connection }), parent: { tool: tool.name, request_id: draft.requestId } })

/** How a call ended, written into its audit row: its output, or its failure (a defect as internal_error, which `logDefect` gets). */
export const callEnded = <E>(draft: AuditDraft, exit: Exit.Exit<ToolOutput, E>, logDefect: (cause: Cause.Cause<E>) => void): Either.Either<ToolOutput, ToolFailure> => {
  if (Exit.isSuccess(exit)) return Either.right(exit.value)
  const failure = Cause.failureOption(exit.cause) as Option.Option<ToolFailure>
  if (Option.isNone(failure)) logDefect(exit.cause)
  return failed(draft, Option.getOrElse(failure, (): ToolFailure => ({ code: "internal_error", message: "The tool failed; the gateway's log has the details" })))
}

/**
 * One call of a tool of the MCP tool table, as every caller makes it (an MCP client, the built-in
 * agent): the tool's scope and the caller's limits checked, the arguments decoded by the tool's
 * schema, the tool run, and what its audit row needs written into `draft` (an MCP request's own, or an
 * agent step's).
 */
export class ToolCalls extends Effect.Service<ToolCalls>()("sluice/ToolCalls", {
  effect: Effect.gen(function* () {
    const gate = yield* Gate
    const connections = yield* Connections

    /** The tool run on arguments already decoded (and written into `draft` by callDecoded), its scope and limits already checked. */
    const runDecoded = (draft: AuditDraft, principal: Principal, tool: ToolDefinition, decoded: unknown, caller: ToolCall["caller"] = "client") =>
      tool.run(decoded, { principal, caller, requestId: draft.requestId, report: (facts, sql, connection) => Effect.sync(() => childQueryReport(draft, tool)(facts, sql, connection)) })

    const call = (
      draft: AuditDraft,
      principal: Principal,
      tool: ToolDefinition,
      args: unknown,
      caller: ToolCall["caller"] = "client"
    ): Effect.Effect<Either.Either<ToolOutput, ToolFailure>, never, Scope.Scope> =>
      Effect.gen(function* () {
        callBegun(draft, tool, args)
        const outcome = yield* Effect.exit(
          Effect.gen(function* () {
            // The tool's scope and the caller's limits, as REST's endpoints get them, before its arguments are looked at.
            yield* gate.authorize(principal, tool.scope, `The ${tool.name} tool`, true).pipe(
              Effect.mapError((e): ToolFailure => ({ code: e.code, message: "retry_after_seconds" in e ? `${e.message}; retry in ${e.retry_after_seconds} s` : e.message, atGate: true }))
            )
            // The same schemas as REST decode the arguments before anything runs or is taken from them.
            const decoded = yield* Effect.mapError(Schema.decodeUnknown(tool.input)(args ?? {}), decodeFailure)
            const named = decoded as { readonly connection_name?: unknown }
            const connection = typeof named.connection_name === "string" ? named.connection_name : draft.connection
            const dialect = connection !== null ? yield* connections.dialectIn(principal.orgId, connection) : null
            callDecoded(draft, tool, decoded, () => dialect)
            return yield* runDecoded(draft, principal, tool, decoded, caller)
          })
        )
        const defects: Array<Cause.Cause<unknown>> = []
        const ended = callEnded(draft, outcome, (cause) => defects.push(cause))
        if (defects.length > 0) yield* Effect.logError("tool call failed", defects[0])
        return ended
      })

    return { call, runDecoded, refuse } as const
  }),
  dependencies: [Connections.Default, Gate.Default]
}) {}
