import { Schema } from "effect"
import { ConnectionName } from "./Connection"
import { StoredText } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const
const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const DEFAULT_MAX_TURNS = 50

export const RunStatus = Schema.Literal("queued", "running", "waiting_for_user", "waiting_for_query_approval", "completed", "failed", "cancelled")
export type RunStatus = typeof RunStatus.Type

export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(["completed", "failed", "cancelled"])

/** What a waiting run waits for: an answer to its question, or a decision on a query it wants to run. */
export const PendingAsk = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("question"), step: Schema.String, question: Schema.String }),
  Schema.Struct({
    kind: Schema.Literal("query_approval"),
    step: Schema.String,
    tool: Schema.String,
    connection_name: Schema.String,
    sql: Schema.String,
    estimated_usd: Schema.Number,
    /** Why it needs approval: over the per-query threshold, or past the conversation's budget. */
    reason: Schema.String
  })
)
export type PendingAsk = typeof PendingAsk.Type

export const AgentRun = Schema.Struct({
  id: Schema.String,
  status: RunStatus,
  prompt: Schema.String,
  connection_name: Schema.NullOr(Schema.String),
  /** The chat conversation the run answers a message of, if any. */
  conversation_id: Schema.NullOr(Schema.String),
  model: Schema.NullOr(Schema.String),
  max_turns: Schema.Int,
  turns: Schema.Int,
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  cost_usd: Schema.Number,
  answer: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, message: Schema.String })),
  pending: Schema.NullOr(PendingAsk),
  /** Fields left out for this caller: what the model wrote can quote rows, which need the query scope to see. */
  withheld: Schema.Array(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  finished_at: Schema.NullOr(Schema.Date)
})
export type AgentRun = typeof AgentRun.Type

export const StartAgentRun = Schema.Struct({
  prompt: StoredText("prompt", 20_000),
  connection_name: optional(ConnectionName),
  max_turns: optional(Schema.Int.pipe(Schema.between(1, 200, { message: () => "max_turns must be an integer from 1 to 200" })))
}).annotations(strict)
export type StartAgentRun = typeof StartAgentRun.Type

export const ClarificationAnswer = StoredText("answer", 20_000)

/** Cancel a run, answer its question, or approve or decline the query it waits on. */
export const PatchAgentRun = Schema.Union(
  Schema.Struct({ action: Schema.Literal("cancel") }).annotations(strict),
  Schema.Struct({ action: Schema.Literal("answer"), answer: ClarificationAnswer }).annotations(strict),
  Schema.Struct({ action: Schema.Literal("approve", "decline") }).annotations(strict)
)
export type PatchAgentRun = typeof PatchAgentRun.Type

/** The agent run's kind among durable jobs: with the run's id, the key of its events. */
export const AGENT_RUN_KIND = "agent_run"
