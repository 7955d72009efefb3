import { Schema } from "effect"
import { SessionName } from "./Budget"
import { Page } from "./Pagination"
import { QueryResponse } from "./Query"
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

// Any JSON value, defined once and referenced: its JSON Schema carries an $id, which may appear only once in a document.
const AnyValue = Schema.Unknown.annotations({ identifier: "AnyValue" })
const TableField = TableParam("table")
const Session = Schema.optional(SessionName)
const PiiMasked = QueryResponse.fields.pii_masked

export const SampleParams = Schema.Struct({ table: TableField, limit: Schema.optional(Int(1, 100, "limit")), session: Session })

export const TableSample = Schema.Struct({
  connection: Schema.String,
  table: Schema.String,
  columns: QueryResponse.fields.columns,
  rows: QueryResponse.fields.rows,
  row_count: Schema.Int,
  pii_masked: PiiMasked
})

export const SampleValues = Schema.Struct({
  connection: Schema.String,
  table: Schema.String,
  columns: Schema.Array(Schema.Struct({ name: Schema.String, values: Schema.Array(AnyValue) })),
  pii_masked: PiiMasked
})

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const ExploreRequest = Schema.Struct({
  table: TableField,
  column: TableParam("column").annotations({ description: "The column whose values to count" }),
  limit: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 100, { message: () => "limit must be an integer between 1 and 100" })), { exact: true }),
  filter_pattern: Schema.optionalWith(
    Schema.String.pipe(Schema.maxLength(200, { message: () => "filter_pattern must be at most 200 characters" })),
    { exact: true }
  ),
  session: Schema.optionalWith(SessionName, { exact: true })
}).annotations(strict)

export const ColumnExploration = Schema.Struct({
  connection: Schema.String,
  table: Schema.String,
  column: Schema.String,
  statistics: Schema.Struct({ total_rows: Schema.Number, distinct_count: Schema.Number, null_count: Schema.Number, null_pct: Schema.Number }),
  values: Schema.Array(Schema.Struct({ value: AnyValue, count: Schema.Number })),
  filter: Schema.NullOr(Schema.String),
  pii_masked: PiiMasked
})

export const ExploreColumnsRequest = Schema.Struct({
  table: TableField,
  columns: Schema.optionalWith(Schema.Array(TableParam("column")).pipe(Schema.maxItems(100, { message: () => "at most 100 columns" })), { exact: true }),
  include_stats: Schema.optionalWith(Schema.Boolean.annotations({ description: "Row, distinct and null counts per column (default true)" }), { exact: true }),
  include_values: Schema.optionalWith(Schema.Boolean.annotations({ description: "The most frequent values per column (default true)" }), { exact: true }),
  value_limit: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, 20, { message: () => "value_limit must be an integer between 1 and 20" })).annotations({ description: "Top values per column (default 5)" }),
    { exact: true }
  ),
  session: Schema.optionalWith(SessionName, { exact: true })
}).annotations(strict)

export const ColumnsExploration = Schema.Struct({
  connection: Schema.String,
  table: Schema.String,
  kind: TableKind,
  row_estimate: Schema.NullOr(Schema.Number),
  total_rows: Schema.NullOr(Schema.Number),
  columns: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      type: Schema.String,
      nullable: Schema.Boolean,
      primary_key: Schema.Boolean,
      comment: Schema.NullOr(Schema.String),
      pii: Schema.NullOr(Schema.String),
      stats: Schema.optional(
        Schema.Struct({
          distinct_count: Schema.Number,
          null_count: Schema.Number,
          null_pct: Schema.Number,
          min: AnyValue,
          max: AnyValue
        })
      ),
      values: Schema.optional(Schema.Array(AnyValue))
    })
  ),
  pii_masked: PiiMasked
})

const Question = Schema.String.pipe(
  Schema.minLength(1, { message: () => "question is required" }),
  Schema.maxLength(2000, { message: () => "question must be at most 2000 characters" })
)

export const SchemaLinkParams = Schema.Struct({
  question: Question,
  format: Schema.optional(Schema.Literal("ddl", "compact", "json")),
  max_tables: Schema.optional(Int(1, 100, "max_tables")),
  max_tokens: Schema.optional(Int(100, 100_000, "max_tokens"))
})

export const SchemaLinkResult = Schema.Struct({
  ...Source,
  question: Schema.String,
  format: Schema.Literal("ddl", "compact", "json"),
  tables: Schema.Array(Schema.Struct({ table: Schema.String, score: Schema.Number, via: Schema.Literal("match", "join") })),
  linked: Schema.Int,
  total_tables: Schema.Int,
  text: Schema.String,
  token_estimate: Schema.Int
})

export const AgentContextParams = Schema.Struct({
  question: Schema.optional(Question),
  max_tokens: Schema.optional(Int(200, 100_000, "max_tokens")),
  max_tables: Schema.optional(Int(1, 500, "max_tables")),
  full_ddl_tables: Schema.optional(Int(0, 100, "full_ddl_tables"))
})

export const AgentContext = Schema.Struct({
  ...Source,
  question: Schema.NullOr(Schema.String),
  text: Schema.String,
  tables: Schema.Array(Schema.String),
  full_ddl_tables: Schema.Int,
  token_estimate: Schema.Int
})

export const WatchInput = Schema.Struct({
  connection: Schema.String.pipe(Schema.minLength(1, { message: () => "connection is required" }), Schema.maxLength(64)),
  name: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200, { message: () => "name must be at most 200 characters" })), { exact: true }),
  tables: Schema.optionalWith(
    Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(300))).pipe(Schema.maxItems(100, { message: () => "at most 100 table patterns" })),
    { exact: true }
  ),
  interval_seconds: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(60, 86_400, { message: () => "interval_seconds must be an integer between 60 and 86400" })),
    { exact: true }
  )
}).annotations(strict)

export const WatchEvent = Schema.Struct({
  id: Schema.String,
  detected_at: Schema.Date,
  from_version: Schema.NullOr(Schema.Int),
  to_version: Schema.Int,
  diff: SchemaDiff
})

export const Watch = Schema.Struct({
  id: Schema.String,
  connection: Schema.String,
  name: Schema.String,
  tables: Schema.Array(Schema.String),
  interval_seconds: Schema.Int,
  enabled: Schema.Boolean,
  last_version: Schema.NullOr(Schema.Int),
  last_run_at: Schema.NullOr(Schema.Date),
  last_error: Schema.NullOr(Schema.String),
  created_by: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})

export const WatchWithEvents = Schema.Struct({ ...Watch.fields, events: Schema.Array(WatchEvent) })
export const Watches = Schema.Struct({ items: Schema.Array(Watch) })
export const WatchRun = Schema.Struct({ watch: Watch, new_events: Schema.Array(WatchEvent) })
