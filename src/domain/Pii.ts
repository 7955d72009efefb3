import { Schema } from "effect"

export const PII_ACTIONS = ["mask", "hash", "redact", "drop"] as const
export const PiiAction = Schema.Literal(...PII_ACTIONS)
export type PiiAction = typeof PiiAction.Type

const Name = (what: string, parts: number) =>
  Schema.String.pipe(
    Schema.pattern(new RegExp(`^[A-Za-z_][A-Za-z0-9_$]{0,127}(\\.[A-Za-z_][A-Za-z0-9_$]{0,127}){0,${parts - 1}}$`), {
      message: () => `${what} must be ${parts > 1 ? "a name, optionally schema-qualified" : "a column name"} (letters, digits, _ and $)`
    })
  )

export const PiiRule = Schema.Struct({
  /** `customers`, `crm.customers` or `db.crm.customers`, resolved like a table in a query. */
  table: Name("table", 3),
  column: Name("column", 1),
  action: PiiAction
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type PiiRule = typeof PiiRule.Type

export const PiiRules = Schema.Struct({
  rules: Schema.Array(PiiRule).pipe(Schema.maxItems(2000, { message: () => "at most 2000 rules" }))
}).annotations({ parseOptions: { onExcessProperty: "error" } })

export const PiiPolicy = Schema.Struct({
  rules: Schema.Array(PiiRule),
  /** Bumped by every change, so cached results under older rules are never served. */
  version: Schema.Int
})
export type PiiPolicy = typeof PiiPolicy.Type

export const PiiProposal = Schema.Struct({
  table: Schema.String,
  column: Schema.String,
  kind: Schema.String,
  action: PiiAction,
  reason: Schema.Literal("column_name", "sampled_values"),
  confidence: Schema.Number
})

export const PiiDetection = Schema.Struct({
  proposed: Schema.Array(PiiProposal),
  scanned_tables: Schema.Int,
  /** Tables that could not be sampled (blocked by policy, unreadable), with the reason. */
  skipped: Schema.Array(Schema.Struct({ table: Schema.String, reason: Schema.String }))
})

export const PiiDetectionSaved = Schema.Struct({ ...PiiDetection.fields, policy: PiiPolicy })

/** The rules about one table: a rule names it as a query would (bare, schema-qualified or with its catalog). */
export const rulesForTable = (rules: ReadonlyArray<PiiRule>, schema: string, table: string) =>
  rules.filter((r) => {
    const parts = r.table.toLowerCase().split(".")
    return parts.at(-1) === table.toLowerCase() && (parts.length < 2 || parts.at(-2) === schema.toLowerCase())
  })
