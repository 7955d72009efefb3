import { Effect, Schema } from "effect"
import { ColumnExploration, ColumnsExploration, ExploreColumnsRequest, ExploreRequest, TableSample } from "../domain/SchemaViews"
import { SchemaExplorer } from "../services/SchemaExplorer"
import { defineTool, READ_ONLY, type ToolCall } from "./ToolDefinition"
import { boundedLines, tableLines, untrusted } from "./ResultText"
import { QueryInput } from "./ToolSchemas"

const strict = { parseOptions: { onExcessProperty: "error" } } as const
const connection_name = QueryInput.fields.connection_name
const table_name = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(300)).annotations({
  description: "A table or view, optionally schema-qualified; case does not matter"
})
const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

const SampleInput = Schema.Struct({
  connection_name,
  table_name,
  limit: optional(Schema.Int.pipe(Schema.between(1, 50)).annotations({ description: "Rows (default 5)" }))
}).annotations(strict)

const ColumnInput = Schema.Struct({
  connection_name,
  table_name,
  column: ExploreRequest.fields.column,
  limit: optional(Schema.Int.pipe(Schema.between(1, 100)).annotations({ description: "Top values to list (default 20)" })),
  filter_pattern: optional(Schema.String.pipe(Schema.maxLength(200)).annotations({ description: "Only values LIKE this pattern (% and _ wildcards)" }))
}).annotations(strict)

const ColumnsInput = Schema.Struct({
  connection_name,
  table_name,
  columns: optional(Schema.Array(Schema.String.pipe(Schema.maxLength(300))).pipe(Schema.maxItems(100)).annotations({ description: "Only these columns (default: the first 30)" })),
  include_stats: ExploreColumnsRequest.fields.include_stats,
  include_values: ExploreColumnsRequest.fields.include_values,
  value_limit: ExploreColumnsRequest.fields.value_limit
}).annotations(strict)

const contextOf = (call: ToolCall) => ({ surface: "mcp" as const, requestId: call.requestId, report: call.report })
const masked = (pii: ReadonlyArray<{ readonly column: string; readonly rule: string }>) =>
  pii.length === 0 ? [] : [`Masked columns: ${pii.map((m) => `${m.column} (${m.rule})`).join(", ")}.`]

/** A look at a table's data before writing SQL: samples, value counts, column statistics, every one a governed query. */
export const exploreTools = Effect.gen(function* () {
  const explorer = yield* SchemaExplorer

  const sampleTable = defineTool({
    name: "sample_table",
    scope: "query",
    title: "Sample a table's rows",
    description: "Shows a few rows of a table (PII masked, blocked tables refused), to see what its values look like before writing a query.",
    input: SampleInput,
    output: TableSample,
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const sample = yield* explorer.samples(call.principal, args.connection_name, args.table_name, args.limit ?? 5, contextOf(call))
        const text = [untrusted(`Sample rows of ${sample.table}.`, tableLines(sample.columns, sample.rows).lines.join("\n")), ...masked(sample.pii_masked)].join("\n")
        return { text, structured: { ...sample } }
      })
  })

  const exploreColumn = defineTool({
    name: "explore_column",
    scope: "query",
    title: "Explore one column's values",
    description:
      "Counts a column's rows, distinct values and NULLs and lists its most frequent values with their counts, optionally only those LIKE a pattern. Use it to find the exact spelling of a value before filtering on it.",
    input: ColumnInput,
    output: ColumnExploration,
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const found = yield* explorer.explore(
          call.principal,
          { connection: args.connection_name, table: args.table_name, column: args.column, limit: args.limit ?? 20, filter_pattern: args.filter_pattern },
          contextOf(call)
        )
        const s = found.statistics
        const text = [
          `${found.table}.${found.column}: ${s.total_rows} rows, ${s.distinct_count} distinct, ${s.null_count} NULL (${s.null_pct} %).`,
          untrusted(
            `Most frequent values${found.filter === null ? "" : ` LIKE ${JSON.stringify(found.filter)}`}.`,
            tableLines([{ name: "value" }, { name: "count" }], found.values.map((v) => [v.value, v.count])).lines.join("\n")
          ),
          ...masked(found.pii_masked)
        ].join("\n")
        return { text, structured: { ...found } }
      })
  })

  const exploreColumns = defineTool({
    name: "explore_columns",
    scope: "query",
    title: "Profile a table's columns",
    description:
      "Profiles a table's columns in one go: type, key, comment, PII rule, distinct and NULL counts, min and max, and a few distinct values each. Use it to understand a table's data before aggregating it.",
    input: ColumnsInput,
    output: ColumnsExploration,
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const found = yield* explorer.exploreColumns(
          call.principal,
          { connection: args.connection_name, table: args.table_name, columns: args.columns, include_stats: args.include_stats, include_values: args.include_values, value_limit: args.value_limit },
          contextOf(call)
        )
        const lines = found.columns.map((c) =>
          [
            `- ${c.name} ${c.type}${c.primary_key ? " [PK]" : ""}${c.pii === null ? "" : ` [PII: ${c.pii}]`}`,
            c.stats === undefined ? "" : `: ${c.stats.distinct_count} distinct, ${c.stats.null_pct} % NULL, min ${JSON.stringify(c.stats.min)}, max ${JSON.stringify(c.stats.max)}`,
            c.values === undefined ? "" : `; values ${JSON.stringify(c.values)}`,
            c.comment === null ? "" : ` -- ${c.comment}`
          ].join("")
        )
        const header = `${found.table}${found.total_rows === null ? "" : ` (${found.total_rows} rows)`}`
        return { text: [untrusted(`Column profile of ${header}.`, boundedLines(lines).text), ...masked(found.pii_masked)].join("\n"), structured: { ...found } }
      })
  })

  return [sampleTable, exploreColumn, exploreColumns]
})
