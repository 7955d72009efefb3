import { Schema } from "effect"
import { Page } from "./Pagination"
import { ColumnInfo, SchemaChange, SchemaDiff, TableInfo, TableKind } from "./SchemaSnapshot"

const Int = (min: number, max: number, what: string) =>
  Schema.NumberFromString.pipe(Schema.int(), Schema.between(min, max, { message: () => `${what} must be an integer between ${min} and ${max}` }))

/** Which snapshot a view was made from. */
const Source = { connection: Schema.String, version: Schema.Int, scanned_at: Schema.Date }

export const SchemaTextParams = Schema.Struct({ max_tables: Schema.optional(Int(1, 10_000, "max_tables")) })

export const SchemaText = Schema.Struct({
  ...Source,
  format: Schema.Literal("compact", "ddl"),
  text: Schema.String,
  table_count: Schema.Int,
  total_tables: Schema.Int,
  token_estimate: Schema.Int
})

export const GroupedSchema = Schema.Struct({
  ...Source,
  schemas: Schema.Array(Schema.Struct({ schema: Schema.String, tables: Schema.Array(TableInfo) }))
})

export const SchemaOverview = Schema.Struct({
  ...Source,
  db_type: Schema.String,
  schemas: Schema.Array(Schema.Struct({ name: Schema.String, tables: Schema.Int })),
  table_count: Schema.Int,
  view_count: Schema.Int,
  column_count: Schema.Int,
  avg_columns_per_table: Schema.Number,
  total_rows: Schema.Number,
  foreign_key_count: Schema.Int,
  tables_with_foreign_keys: Schema.Int,
  largest_tables: Schema.Array(
    Schema.Struct({ table: Schema.String, rows: Schema.Number, size_bytes: Schema.NullOr(Schema.Number), columns: Schema.Int })
  ),
  hub_tables: Schema.Array(Schema.Struct({ table: Schema.String, foreign_keys: Schema.Int })),
  token_estimates: Schema.Struct({ ddl: Schema.Int, compact: Schema.Int }),
  recommended_format: Schema.Literal("ddl", "compact", "link")
})

export const SchemaSearchParams = Schema.Struct({
  q: Schema.String.pipe(
    Schema.minLength(1, { message: () => "q is required" }),
    Schema.maxLength(500, { message: () => "q must be at most 500 characters" })
  ),
  limit: Schema.optional(Int(1, 100, "limit"))
})

export const SchemaSearchResult = Schema.Struct({
  ...Source,
  query: Schema.String,
  tables: Schema.Array(
    Schema.Struct({
      table: Schema.String,
      kind: TableKind,
      score: Schema.Number,
      matched_terms: Schema.Array(Schema.String),
      comment: Schema.NullOr(Schema.String),
      row_estimate: Schema.NullOr(Schema.Number),
      columns: Schema.Array(Schema.String)
    })
  ),
  columns: Schema.Array(Schema.Struct({ table: Schema.String, column: ColumnInfo, score: Schema.Number }))
})

const Pattern = (what: string) =>
  Schema.String.pipe(Schema.maxLength(200, { message: () => `${what} must be at most 200 characters` }))

/** Structured filters; `*` matches any run of characters, case-insensitively. */
export const SchemaFilterParams = Schema.Struct({
  schema: Schema.optional(Pattern("schema")),
  table: Schema.optional(Pattern("table")),
  column: Schema.optional(Pattern("column")),
  type: Schema.optional(Pattern("type")),
  kind: Schema.optional(TableKind),
  has_foreign_keys: Schema.optional(Schema.BooleanFromString),
  min_rows: Schema.optional(Schema.NumberFromString.pipe(Schema.nonNegative({ message: () => "min_rows must be 0 or more" }))),
  limit: Schema.optional(Int(1, 1000, "limit"))
})

export const SchemaFilterResult = Schema.Struct({ ...Source, total: Schema.Int, tables: Schema.Array(TableInfo) })

export const WarmupResult = Schema.Struct({
  started: Schema.Array(Schema.String),
  ready: Schema.Array(Schema.String),
  skipped: Schema.Array(Schema.Struct({ connection: Schema.String, reason: Schema.String }))
})

export const SchemaCacheStats = Schema.Struct({
  connections: Schema.Int,
  tables: Schema.Int,
  search_indexes: Schema.Int,
  scans_running: Schema.Int,
  replica: Schema.Struct({ entries: Schema.Int, capacity: Schema.Int, hits: Schema.Int, loads: Schema.Int, scans: Schema.Int })
})

export const SchemaCacheInvalidate = Schema.Struct({ connection: Schema.optional(Schema.String) }).annotations({
  parseOptions: { onExcessProperty: "error" }
})

export const LiveDiff = Schema.Struct({
  ...Source,
  checked_at: Schema.Date,
  changed: Schema.Boolean,
  diff: SchemaDiff
})

export const ConnectionsDiff = Schema.Struct({
  connection: Schema.String,
  compare: Schema.String,
  version: Schema.Int,
  compare_version: Schema.Int,
  changed: Schema.Boolean,
  diff: SchemaDiff
})

export const SchemaChanges = Page(SchemaChange)

export const Relationship = Schema.Struct({
  from_table: Schema.String,
  from_columns: Schema.Array(Schema.String),
  to_table: Schema.String,
  to_columns: Schema.Array(Schema.String),
  kind: Schema.Literal("declared", "inferred"),
  confidence: Schema.Number,
  reason: Schema.String
})

export const RelationshipParams = Schema.Struct({
  include_inferred: Schema.optional(Schema.BooleanFromString),
  table: Schema.optional(Schema.String.pipe(Schema.maxLength(300, { message: () => "table must be at most 300 characters" })))
})

export const Relationships = Schema.Struct({ ...Source, relationships: Schema.Array(Relationship) })

const TableParam = (what: string) =>
  Schema.String.pipe(
    Schema.minLength(1, { message: () => `${what} is required` }),
    Schema.maxLength(300, { message: () => `${what} must be at most 300 characters` })
  )

export const JoinPathParams = Schema.Struct({
  from: TableParam("from"),
  to: TableParam("to"),
  max_hops: Schema.optional(Int(1, 6, "max_hops")),
  include_inferred: Schema.optional(Schema.BooleanFromString)
})

export const JoinPath = Schema.Struct({
  tables: Schema.Array(Schema.String),
  hops: Schema.Int,
  joins: Schema.Array(Schema.Struct({ from: Schema.String, to: Schema.String, on: Schema.String, kind: Schema.Literal("declared", "inferred") })),
  confidence: Schema.Number,
  sql: Schema.String
})

export const JoinPaths = Schema.Struct({ ...Source, from: Schema.String, to: Schema.String, paths: Schema.Array(JoinPath) })
