import { Schema } from "effect"
import { ApiError } from "./Errors"

export const SessionName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_.:-]{1,128}$/, { message: () => "session must be 1 to 128 letters, digits, '_', '.', ':' or '-'" })
).annotations({ description: "The session budget this call draws from, besides any budget of the key" })

const limit = (name: string) =>
  Schema.optionalWith(
    Schema.Number.pipe(Schema.nonNegative({ message: () => `${name} must be a non-negative number` }), Schema.finite()),
    { exact: true }
  )

/** The amounts a budget caps; absent means no cap on that amount. */
const LIMIT_FIELDS = ["max_queries", "max_rows", "max_bytes_scanned", "max_cost", "max_duration_ms"] as const
export type LimitField = (typeof LIMIT_FIELDS)[number]

export const CreateBudget = Schema.Struct({
  session: Schema.optionalWith(SessionName, { exact: true }),
  key_id: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(64)), { exact: true }),
  max_queries: limit("max_queries"),
  max_rows: limit("max_rows"),
  max_bytes_scanned: limit("max_bytes_scanned"),
  max_cost: limit("max_cost"),
  max_duration_ms: limit("max_duration_ms"),
  expires_at: Schema.optionalWith(Schema.DateFromString, { exact: true })
}).pipe(
  Schema.filter((b) => b.session !== undefined || b.key_id !== undefined || "a budget needs a session or a key_id"),
  Schema.filter((b) => LIMIT_FIELDS.some((f) => b[f] !== undefined) || `set at least one of ${LIMIT_FIELDS.join(", ")}`),
  Schema.annotations({ parseOptions: { onExcessProperty: "error" } })
)
export type CreateBudget = typeof CreateBudget.Type

const Amounts = Schema.Struct({
  queries: Schema.NullOr(Schema.Number),
  rows: Schema.NullOr(Schema.Number),
  bytes_scanned: Schema.NullOr(Schema.Number),
  cost: Schema.NullOr(Schema.Number),
  duration_ms: Schema.NullOr(Schema.Number)
})
export type Amounts = typeof Amounts.Type

export const Budget = Schema.Struct({
  id: Schema.String,
  session: Schema.NullOr(Schema.String),
  key_id: Schema.NullOr(Schema.String),
  limits: Amounts,
  used: Amounts,
  /** What is left of each capped amount; null where the budget sets no cap. */
  remaining: Amounts,
  exhausted: Schema.Boolean,
  expires_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date
})
export type Budget = typeof Budget.Type

/** What one query spends from a budget. */
export interface Usage {
  readonly queries: number
  readonly rows: number
  readonly bytes_scanned: number
  readonly cost: number
  readonly duration_ms: number
}

export class BudgetExhausted extends ApiError<BudgetExhausted>()(
  "BudgetExhausted",
  { code: "budget_exhausted", status: 429 },
  { budget_id: Schema.String }
) {}
