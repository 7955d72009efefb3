import { Effect, Schema } from "effect"
import { rulesForTable } from "../domain/Pii"
import { qualifiedName, TableInfo } from "../domain/SchemaSnapshot"
import { JoinPaths, LiveDiff, Relationships, SchemaLinkResult, SchemaOverview, SchemaSearchResult, SchemaText } from "../domain/SchemaViews"
import { tablesNamed } from "../schema/SchemaFilter"
import { compactLine, overviewOf, schemaText } from "../schema/SchemaFormats"
import { columnHitJson, tableHitJson } from "../schema/SchemaSearch"
import { Connections } from "../services/Connections"
import { SchemaChanges } from "../services/SchemaChanges"
import { SchemaContext } from "../services/SchemaContext"
import { SchemaRelations } from "../services/SchemaRelations"
import { Schemas, type SchemaView } from "../services/Schemas"
import { defineTool, READ_ONLY } from "./ToolDefinition"
import { boundedLines, untrusted } from "./ResultText"
import { QueryInput } from "./ToolSchemas"

const strict = { parseOptions: { onExcessProperty: "error" } } as const
const connectionName = QueryInput.fields.connection_name

const TableName = Schema.String.pipe(
  Schema.minLength(1, { message: () => "table_name is required" }),
  Schema.maxLength(300, { message: () => "table_name must be at most 300 characters" })
).annotations({ description: "A table or view, optionally schema-qualified (sales.orders); case does not matter" })

const ListTablesInput = Schema.Struct({
  connection_name: connectionName,
  schema: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(255)).annotations({ description: "Only this schema's tables" }), { exact: true })
}).annotations(strict)

const DescribeInput = Schema.Struct({ connection_name: connectionName, table_name: TableName }).annotations(strict)

const SearchInput = Schema.Struct({
  connection_name: connectionName,
  query: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(500)).annotations({
    description: "Words or a question: table and column names, what the data is about"
  }),
  limit: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 50)).annotations({ description: "Tables to return (default 10)" }), { exact: true })
}).annotations(strict)

const DdlInput = Schema.Struct({
  connection_name: connectionName,
  max_tables: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, 500)).annotations({ description: "The most connected tables first; default 50" }),
    { exact: true }
  )
}).annotations(strict)

const RelationshipsInput = Schema.Struct({
  connection_name: connectionName,
  table_name: Schema.optionalWith(TableName.annotations({ description: "Only the keys into and out of this table" }), { exact: true })
}).annotations(strict)

const JoinPathInput = Schema.Struct({
  connection_name: connectionName,
  from_table: TableName,
  to_table: TableName,
  max_hops: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 6)).annotations({ description: "Joins at most (default 4)" }), { exact: true })
}).annotations(strict)

const LinkInput = Schema.Struct({
  connection_name: connectionName,
  question: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2000)).annotations({ description: "The question the SQL must answer, in plain words" }),
  format: Schema.optionalWith(Schema.Literal("ddl", "compact", "json").annotations({ description: "ddl (default), compact lines, or json" }), { exact: true }),
  max_tables: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 100)).annotations({ description: "At most this many tables (default 20)" }), { exact: true })
}).annotations(strict)

const OneConnectionRequired = Schema.Struct({ connection_name: connectionName }).annotations(strict)

const sourceLine = (view: SchemaView) =>
  `${view.snapshot.connection} (${view.snapshot.db_type}), schema version ${view.snapshot.version} scanned ${view.snapshot.scanned_at.toISOString()}`

/** Schema context from the connection's latest scan: names, columns, keys and comments, never rows. */
export const schemaTools = Effect.gen(function* () {
  const schemas = yield* Schemas
  const connections = yield* Connections
  const context = yield* SchemaContext
  const relations = yield* SchemaRelations
  const changes = yield* SchemaChanges

  const listTables = defineTool({
    name: "list_tables",
    scope: "read",
    title: "List tables",
    description:
      "Lists a connection's tables and views, one line each: `schema.table (rows): column type, …` where `*` marks a primary key column and `→` a foreign key. Filter by schema; use schema_search when there are many.",
    input: ListTablesInput,
    output: Schema.Struct({ tables: Schema.Array(Schema.String), total: Schema.Int }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const view = yield* schemas.view(call.principal, args.connection_name)
        const tables = args.schema === undefined ? view.tables : view.tables.filter((t) => t.schema.toLowerCase() === args.schema!.toLowerCase())
        const lines = tables.map(compactLine)
        const shown = boundedLines(lines)
        const notes = shown.left > 0 ? [`${shown.left} more tables are not shown: filter by schema or use schema_search.`] : []
        const text = [untrusted(`Tables of ${sourceLine(view)}: ${tables.length}.`, shown.text), ...notes].join("\n")
        return { text, structured: { tables: tables.map(qualifiedName), total: tables.length } }
      })
  })

  const describeTable = defineTool({
    name: "describe_table",
    scope: "read",
    title: "Describe a table",
    description:
      "Shows one table or view: its description, every column with type, nullability, key and comment, which columns are PII-masked, its foreign keys, the tables that reference it, and its indexes. Use it before writing SQL against a table.",
    input: DescribeInput,
    output: Schema.Struct({
      table: TableInfo,
      referenced_by: Schema.Array(Schema.String),
      pii: Schema.Array(Schema.Struct({ column: Schema.String, action: Schema.String }))
    }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const view = yield* schemas.view(call.principal, args.connection_name)
        const found = tablesNamed(view.tables, args.table_name)
        const table = found[0]
        if (table === undefined) {
          const near = view.search().searchTables(args.table_name, 5, view.visible).map((hit) => qualifiedName(hit.table))
          return yield* Effect.fail({
            code: "not_found",
            message: `No table "${args.table_name}" on ${view.snapshot.connection}${near.length > 0 ? `; did you mean ${near.join(", ")}?` : ""}`
          })
        }
        const name = qualifiedName(table)
        const policy = (yield* connections.target(call.principal, args.connection_name)).pii
        const pii = rulesForTable(policy.rules, table.schema, table.name).map((r) => ({ column: r.column, action: r.action }))
        const masked = new Map(pii.map((p) => [p.column.toLowerCase(), p.action]))
        const fk = new Map(table.foreign_keys.flatMap((k) => k.columns.map((c, i) => [c, `${k.references.schema}.${k.references.table}.${k.references.columns[i] ?? "?"}`] as const)))
        const referencedBy = view.tables.flatMap((t) =>
          t.foreign_keys
            .filter((k) => k.references.schema === table.schema && k.references.table === table.name)
            .map((k) => `${qualifiedName(t)}(${k.columns.join(", ")})`)
        )
        const lines = [
          `Table: ${name} (${table.kind.replace("_", " ")})${table.row_estimate === null ? "" : `, about ${table.row_estimate} rows`}`,
          ...(table.comment ? [`Description: ${table.comment}`] : []),
          "Columns:",
          ...table.columns.map(
            (c) =>
              `- ${c.name} — ${c.type} (${c.nullable ? "nullable" : "NOT NULL"})${c.primary_key ? " [PK]" : ""}${fk.has(c.name) ? ` [FK→${fk.get(c.name)}]` : ""}${
                masked.has(c.name.toLowerCase()) ? ` [PII: ${masked.get(c.name.toLowerCase())}]` : ""
              }${c.comment ? ` -- ${c.comment}` : ""}`
          ),
          ...(referencedBy.length > 0 ? [`Referenced by: ${referencedBy.join(", ")}`] : []),
          ...(table.indexes.length > 0 ? [`Indexes: ${table.indexes.map((i) => `${i.name}(${i.columns.join(", ")})${i.unique ? " unique" : ""}`).join("; ")}`] : [])
        ]
        const others = found.length > 1 ? [`Other tables of that name: ${found.slice(1).map(qualifiedName).join(", ")}.`] : []
        const text = [untrusted(`From ${sourceLine(view)}.`, boundedLines(lines).text), ...others].join("\n")
        return { text, structured: { table, referenced_by: referencedBy, pii } }
      })
  })

  const schemaSearch = defineTool({
    name: "schema_search",
    scope: "read",
    title: "Search the schema",
    description:
      "Finds the tables and columns that match words or a question (ranked by BM25 over names split into words, comments and notes). Use it to find where data lives before describe_table and query_database.",
    input: SearchInput,
    output: Schema.Struct({ tables: SchemaSearchResult.fields.tables, columns: SchemaSearchResult.fields.columns }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const view = yield* schemas.view(call.principal, args.connection_name)
        const { tables, columns } = view.search().search(args.query, { tables: args.limit ?? 10, columns: 10 }, view.visible)
        const lines = [
          ...tables.map((hit) => compactLine(hit.table)),
          ...(columns.length > 0 ? ["Matching columns:", ...columns.map((hit) => `- ${qualifiedName(hit.table)}.${hit.column}`)] : [])
        ]
        const text =
          tables.length === 0
            ? `No table of ${view.snapshot.connection} matches "${args.query}"; try other words or list_tables.`
            : untrusted(`Best matches first, from ${sourceLine(view)}.`, boundedLines(lines).text)
        return {
          text,
          structured: { tables: tables.map(tableHitJson), columns: columns.map(columnHitJson) }
        }
      })
  })

  const schemaOverview = defineTool({
    name: "schema_overview",
    scope: "read",
    title: "Schema overview",
    description:
      "Summarizes a connection's schema: schemas, table, view and column counts, total rows, foreign keys, the largest and most connected tables, and which form to read it in (ddl, compact, or schema_search when it is too big for either).",
    input: OneConnectionRequired,
    output: SchemaOverview.pipe(Schema.omit("connection", "version", "scanned_at", "db_type")),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const view = yield* schemas.view(call.principal, args.connection_name)
        const o = overviewOf(view.tables)
        const advice =
          o.recommended_format === "ddl"
            ? "The whole schema fits comfortably: read it with schema_ddl."
            : o.recommended_format === "compact"
              ? "Read it with list_tables (compact lines); the DDL would be too long."
              : "Too big to read whole: find tables with schema_search, then describe_table."
        const lines = [
          `Schemas: ${o.schemas.map((s) => `${s.name} (${s.tables})`).join(", ")}`,
          `Tables: ${o.table_count}, views: ${o.view_count}, columns: ${o.column_count} (${o.avg_columns_per_table} a table), rows: about ${o.total_rows}`,
          `Foreign keys: ${o.foreign_key_count} on ${o.tables_with_foreign_keys} tables`,
          `Largest: ${o.largest_tables.map((t) => `${t.table} (${t.rows} rows)`).join(", ") || "none"}`,
          `Most connected: ${o.hub_tables.map((t) => `${t.table} (${t.foreign_keys} keys)`).join(", ") || "none"}`
        ]
        return { text: [untrusted(`Overview of ${sourceLine(view)}.`, boundedLines(lines).text), advice].join("\n"), structured: o }
      })
  })

  const schemaDdl = defineTool({
    name: "schema_ddl",
    scope: "read",
    title: "Schema as CREATE TABLE statements",
    description:
      "Gives the connection's tables as CREATE TABLE text with keys, comments and row counts, most connected tables first, with an estimate of its tokens. Best for schemas schema_overview says fit; otherwise use schema_search and describe_table.",
    input: DdlInput,
    output: SchemaText.pipe(Schema.omit("connection", "version", "scanned_at")),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const view = yield* schemas.view(call.principal, args.connection_name)
        const ddl = schemaText(view.tables, "ddl", args.max_tables ?? 50)
        const shown = boundedLines(ddl.text.split("\n"))
        const notes = [
          `${ddl.table_count} of ${ddl.total_tables} tables, about ${ddl.token_estimate} tokens.`,
          ...(shown.left > 0 ? ["The text was cut at 12,000 characters: ask for fewer tables (max_tables)."] : [])
        ]
        return { text: [untrusted(`DDL of ${sourceLine(view)}.`, shown.text), ...notes].join("\n"), structured: { ...ddl } }
      })
  })

  const schemaDiff = defineTool({
    name: "schema_diff",
    scope: "read",
    title: "What changed in the schema",
    description:
      "Compares the database's catalog now with the last stored scan: tables added or removed, columns added, removed, retyped or made (non-)nullable, keys changed. Use it when a query fails on a column or table that used to exist.",
    input: OneConnectionRequired,
    output: LiveDiff.pipe(Schema.omit("connection", "version", "scanned_at", "checked_at")),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const live = yield* changes.liveDiff(call.principal, args.connection_name)
        const d = live.diff
        const lines = [
          ...(d.added_tables.length > 0 ? [`Added tables: ${d.added_tables.join(", ")}`] : []),
          ...(d.removed_tables.length > 0 ? [`Removed tables: ${d.removed_tables.join(", ")}`] : []),
          ...d.changed_tables.map((c) =>
            [
              `Changed ${c.table}:`,
              ...c.added_columns.map((a) => `+${a.name} ${a.type}`),
              ...c.removed_columns.map((r) => `-${r}`),
              ...c.retyped_columns.map((r) => `${r.column} ${r.from} → ${r.to}`),
              ...c.nullability_changed.map((n) => `${n.column} now ${n.nullable ? "nullable" : "NOT NULL"}`),
              ...(c.keys_changed ? ["keys changed"] : [])
            ].join(" ")
          )
        ]
        const text = live.changed
          ? untrusted(`Changes since schema version ${live.version} (scanned ${live.scanned_at.toISOString()}).`, boundedLines(lines).text)
          : `No change since schema version ${live.version} (scanned ${live.scanned_at.toISOString()}).`
        return { text, structured: { changed: live.changed, diff: live.diff } }
      })
  })

  const getRelationships = defineTool({
    name: "get_relationships",
    scope: "read",
    title: "How tables relate",
    description:
      "Lists the foreign keys between tables, one per line as `a.col → b.col`: declared ones, and ones inferred from column names and types (marked inferred, with a confidence). Give table_name for one table's keys in and out.",
    input: RelationshipsInput,
    output: Schema.Struct({ relationships: Relationships.fields.relationships }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const found = yield* relations.relationships(call.principal, args.connection_name, args.table_name === undefined ? {} : { table: args.table_name })
        const lines = found.relationships.map(
          (r) =>
            `${r.from_columns.map((c) => `${r.from_table}.${c}`).join(", ")} → ${r.to_columns.map((c) => `${r.to_table}.${c}`).join(", ")}${r.kind === "inferred" ? ` (inferred, ${r.confidence})` : ""}`
        )
        const shown = boundedLines(lines)
        const text =
          lines.length === 0
            ? "No relationships found."
            : [untrusted(`Relationships in ${sourceLine(found.schema)}.`, shown.text), ...(shown.left > 0 ? [`${shown.left} more: give table_name.`] : [])].join("\n")
        return { text, structured: { relationships: found.relationships } }
      })
  })

  const findJoinPath = defineTool({
    name: "find_join_path",
    scope: "read",
    title: "How to join two tables",
    description:
      "Finds the shortest ways to join two tables through foreign keys (declared and inferred), up to ten paths, each with its JOIN … ON clauses ready to paste into a query.",
    input: JoinPathInput,
    output: Schema.Struct({ from: Schema.String, to: Schema.String, paths: JoinPaths.fields.paths }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const found = yield* relations.joinPaths(call.principal, args.connection_name, {
          from: args.from_table,
          to: args.to_table,
          ...(args.max_hops === undefined ? {} : { max_hops: args.max_hops })
        })
        const text =
          found.paths.length === 0
            ? `No join path from ${found.from} to ${found.to} within ${args.max_hops ?? 4} joins.`
            : untrusted(
                `Join paths from ${found.from} to ${found.to}, shortest first.`,
                boundedLines(found.paths.flatMap((p, i) => [`-- path ${i + 1}: ${p.hops} join${p.hops === 1 ? "" : "s"}, confidence ${p.confidence}`, p.sql])).text
              )
        return { text, structured: { from: found.from, to: found.to, paths: found.paths } }
      })
  })

  const schemaLink = defineTool({
    name: "schema_link",
    scope: "read",
    title: "The tables a question needs",
    description:
      "Picks the tables most relevant to a question (search over names, columns and comments, plus the tables their keys join to) and returns just those, as DDL, compact lines or JSON, within about 4,000 tokens. The best first step before writing SQL on a large schema.",
    input: LinkInput,
    output: SchemaLinkResult.pipe(Schema.omit("connection", "version", "scanned_at")),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const { view, ...linked } = yield* context.link(call.principal, args.connection_name, args)
        const text =
          linked.linked === 0
            ? `No table of ${view.snapshot.connection} matches the question; try schema_search with other words.`
            : [
                untrusted(`Tables linked to the question from ${sourceLine(view)}: ${linked.linked} of ${linked.total_tables}, about ${linked.token_estimate} tokens.`, boundedLines(linked.text.split("\n")).text)
              ].join("\n")
        return { text, structured: linked }
      })
  })

  return [schemaLink, listTables, describeTable, schemaSearch, schemaOverview, schemaDdl, schemaDiff, getRelationships, findJoinPath]
})
