import { Schema } from "effect"

const strict = { parseOptions: { onExcessProperty: "error" } } as const
const Name = Schema.String.pipe(
  Schema.pattern(/^[a-z_][a-z0-9_]{0,127}$/, { message: () => "names are lower_snake_case, at most 128 characters" })
)
const Expr = Schema.String.pipe(
  Schema.minLength(1, { message: () => "expr is required" }),
  Schema.maxLength(2000, { message: () => "expr must be at most 2000 characters" })
)
const Description = Schema.optionalWith(Schema.String.pipe(Schema.maxLength(2000)), { exact: true })

export const Entity = Schema.Struct({
  name: Name,
  type: Schema.Literal("primary", "unique", "foreign"),
  expr: Expr,
  description: Description
}).annotations(strict)

export const Dimension = Schema.Struct({
  name: Name,
  type: Schema.Literal("categorical", "time"),
  expr: Expr,
  time_granularity: Schema.optionalWith(Schema.Literal("day", "week", "month", "quarter", "year"), { exact: true }),
  description: Description
}).annotations(strict)

export const Measure = Schema.Struct({
  name: Name,
  agg: Schema.Literal("sum", "count", "count_distinct", "avg", "min", "max"),
  expr: Expr,
  description: Description
}).annotations(strict)

/**
 * One table's semantic model, in the spirit of dbt's: entities (its keys; a foreign entity named
 * like another model's primary entity is the join between them), dimensions and measures.
 */
export const SemanticModelEntry = Schema.Struct({
  name: Name,
  /** The table, `schema.table`. */
  model: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(300)),
  description: Description,
  entities: Schema.Array(Entity).pipe(Schema.maxItems(200)),
  dimensions: Schema.Array(Dimension).pipe(Schema.maxItems(500)),
  measures: Schema.Array(Measure).pipe(Schema.maxItems(500))
}).annotations(strict)
export type SemanticModelEntry = typeof SemanticModelEntry.Type

export const SemanticModelDocument = Schema.Struct({
  semantic_models: Schema.Array(SemanticModelEntry).pipe(Schema.maxItems(5000, { message: () => "at most 5000 semantic models" }))
}).annotations(strict)
export type SemanticModelDocument = typeof SemanticModelDocument.Type

export const StoredSemanticModel = Schema.Struct({
  connection: Schema.String,
  version: Schema.Int,
  source: Schema.Literal("manual", "generated"),
  updated_by: Schema.NullOr(Schema.String),
  updated_at: Schema.Date,
  semantic_models: SemanticModelDocument.fields.semantic_models
})
