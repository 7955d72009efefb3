import { Schema } from "effect"
import { noNul } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

/** Sandboxes one gateway process runs at once (the rest wait in snapshots or are refused). */
export const MAX_RUNNING_SANDBOXES = 10
/** The most code one execute sends, in characters. */
export const MAX_CODE_CHARS = 1024 * 1024
export const MAX_TIMEOUT_SECONDS = 3600

export const SandboxStatus = Schema.Literal("starting", "running", "idle", "snapshotted", "stopped", "error")
export type SandboxStatus = typeof SandboxStatus.Type

const TimeoutSeconds = Schema.Int.pipe(
  Schema.between(1, MAX_TIMEOUT_SECONDS, { message: () => `timeout_seconds must be a whole number of seconds between 1 and ${MAX_TIMEOUT_SECONDS}` })
)

export const CreateSandbox = Schema.Struct({
  connection_name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200), noNul("connection_name"))),
  label: Schema.optional(Schema.Trim.pipe(Schema.maxLength(200, { message: () => "label must be at most 200 characters" }), noNul("label"))),
  row_limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 100_000, { message: () => "row_limit must be between 1 and 100000" }))),
  budget_usd: Schema.optional(Schema.Number.pipe(Schema.between(0, 1_000_000, { message: () => "budget_usd must be between 0 and 1000000" }))),
  timeout_seconds: Schema.optional(TimeoutSeconds)
}).annotations(strict)
export type CreateSandbox = typeof CreateSandbox.Type

export const ExecuteCode = Schema.Struct({
  code: Schema.String.pipe(Schema.maxLength(MAX_CODE_CHARS, { message: () => `code must be at most ${MAX_CODE_CHARS} characters` })),
  timeout_seconds: Schema.optional(TimeoutSeconds)
}).annotations(strict)
export type ExecuteCode = typeof ExecuteCode.Type

export const ExecuteResult = Schema.Struct({
  success: Schema.Boolean,
  stdout: Schema.String,
  stderr: Schema.String,
  error: Schema.NullOr(Schema.String),
  execution_ms: Schema.Number,
  truncated: Schema.Boolean
})
export type ExecuteResult = typeof ExecuteResult.Type

export const Sandbox = Schema.Struct({
  id: Schema.String,
  label: Schema.NullOr(Schema.String),
  status: SandboxStatus,
  connection_name: Schema.NullOr(Schema.String),
  row_limit: Schema.NullOr(Schema.Int),
  budget_usd: Schema.NullOr(Schema.Number),
  spent_usd: Schema.Number,
  timeout_seconds: Schema.Int,
  created_by: Schema.String,
  executions: Schema.Int,
  queries: Schema.Int,
  /** Globals a snapshot could not keep (they could not be pickled): gone after a resume. */
  unpicklable: Schema.Array(Schema.String),
  snapshot_bytes: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  last_used_at: Schema.String,
  snapshotted_at: Schema.NullOr(Schema.String),
  /** When its snapshot is deleted, if it stays unused. */
  expires_at: Schema.NullOr(Schema.String)
})
export type Sandbox = typeof Sandbox.Type
