import { ParseResult, Schema } from "effect"

/** Epoch seconds or an ISO 8601 time, as a query parameter. */
const TimeParam = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (input, _, ast) => {
    const seconds = /^\d{1,12}$/.test(input) ? Number(input) : Date.parse(input) / 1000
    return Number.isFinite(seconds)
      ? ParseResult.succeed(Math.floor(seconds))
      : ParseResult.fail(new ParseResult.Type(ast, input, "expected epoch seconds or an ISO 8601 time"))
  },
  encode: (seconds) => ParseResult.succeed(String(seconds))
})

export const Outcome = Schema.Literal("success", "refused", "error")

export const AuditFilterParams = Schema.Struct({
  from: Schema.optional(TimeParam),
  to: Schema.optional(TimeParam),
  event_type: Schema.optional(Schema.String.pipe(Schema.maxLength(64))),
  connection: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/))),
  key_id: Schema.optional(Schema.String.pipe(Schema.maxLength(64))),
  outcome: Schema.optional(Outcome),
  exclude_reads: Schema.optional(
    Schema.BooleanFromString.annotations({
      description: "true leaves out plain GET requests to /api (page loads and listings, such as the web app's own); reads of rows and queries stay"
    })
  )
})

export const AuditEntry = Schema.Struct({
  id: Schema.String,
  timestamp: Schema.Number,
  principal: Schema.NullOr(Schema.String),
  key_id: Schema.NullOr(Schema.String),
  /** The key's name while it exists; null for a deleted key or a request without one. */
  key_name: Schema.NullOr(Schema.String),
  user_id: Schema.NullOr(Schema.String),
  event_type: Schema.String,
  method: Schema.NullOr(Schema.String),
  route: Schema.String,
  status: Schema.NullOr(Schema.Number),
  connection: Schema.NullOr(Schema.String),
  sql: Schema.NullOr(Schema.String),
  outcome: Outcome,
  block_reason: Schema.NullOr(Schema.String),
  rows: Schema.NullOr(Schema.Number),
  duration_ms: Schema.Number,
  client_ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String),
  request_id: Schema.String,
  details: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})

const Counts = { success: Schema.Number, refused: Schema.Number, error: Schema.Number }

export const AuditStats = Schema.Struct({
  since: Schema.Number,
  total: Schema.Number,
  ...Counts,
  hourly: Schema.Array(Schema.Struct({ hour: Schema.Number, ...Counts })),
  top_keys: Schema.Array(Schema.Struct({ key_id: Schema.String, principal: Schema.NullOr(Schema.String), requests: Schema.Number })),
  block_reasons: Schema.Array(Schema.Struct({ block_reason: Schema.String, count: Schema.Number }))
})
