import { Schema } from "effect"
import { AgentRun, PendingAsk, RunStatus, StartAgentRun } from "./AgentRun"
import { ConnectionName } from "./Connection"
import { noNul } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const Conversation = Schema.Struct({
  id: Schema.String,
  /** As given, or the first message's first line. */
  title: Schema.String,
  /** The connection its runs use unless a message names another. */
  connection_name: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type Conversation = typeof Conversation.Type

export const StartConversation = Schema.Struct({
  title: Schema.optionalWith(
    Schema.Trim.pipe(Schema.minLength(1, { message: () => "title must not be empty" }), Schema.maxLength(200, { message: () => "title must be at most 200 characters" }), noNul("title")),
    { exact: true }
  ),
  connection_name: Schema.optionalWith(ConnectionName, { exact: true })
}).annotations(strict)
export type StartConversation = typeof StartConversation.Type

export const PostMessage = Schema.Struct({ content: StartAgentRun.fields.prompt }).annotations(strict)
export type PostMessage = typeof PostMessage.Type

/**
 * A message of a conversation: the user's (a run's prompt) or the agent's (that run's answer, or
 * what it is doing: its status, its question or the query it wants approved, its error).
 */
export const Message = Schema.Struct({
  id: Schema.String,
  role: Schema.Literal("user", "assistant"),
  content: Schema.NullOr(Schema.String),
  run_id: Schema.String,
  status: Schema.NullOr(RunStatus),
  pending: Schema.NullOr(PendingAsk),
  error: AgentRun.fields.error,
  created_at: Schema.Date
})
export type Message = typeof Message.Type

export const PostedMessage = Schema.Struct({ message: Message, run: AgentRun })

/** A conversation as a trace: its runs' model calls and tool calls, with their totals. */
export const TraceThread = Schema.Struct({
  ...Conversation.fields,
  runs: Schema.Int,
  model_calls: Schema.Int,
  tool_calls: Schema.Int,
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  cost_usd: Schema.Number
})
export type TraceThread = typeof TraceThread.Type

export const TraceEvent = Schema.Struct({
  run_id: Schema.String,
  seq: Schema.Int,
  type: Schema.String,
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  created_at: Schema.Date
})

/** Where a query came from: its statement and connection, and the run and message that asked for it. */
export const AnalysisTrail = Schema.Struct({
  query_id: Schema.String,
  connection_name: Schema.NullOr(Schema.String),
  sql: Schema.NullOr(Schema.String),
  surface: Schema.String,
  outcome: Schema.String,
  rows: Schema.NullOr(Schema.Int),
  executed_at: Schema.Date,
  request_id: Schema.NullOr(Schema.String),
  run_id: Schema.NullOr(Schema.String),
  step: Schema.NullOr(Schema.String),
  conversation_id: Schema.NullOr(Schema.String),
  message_id: Schema.NullOr(Schema.String)
})
export type AnalysisTrail = typeof AnalysisTrail.Type
