import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BudgetExhausted } from "../domain/Budget"
import { ConnectionName } from "../domain/Connection"
import { GovernedQueryErrors } from "../domain/Query"
import { RefreshStatus, SchemaSnapshot } from "../domain/SchemaSnapshot"
import { PageParams } from "../domain/Pagination"
import {
  AgentContext,
  AgentContextParams,
  ColumnExploration,
  ColumnsExploration,
  ConnectionsDiff,
  ExploreColumnsRequest,
  ExploreRequest,
  GroupedSchema,
  JoinPathParams,
  JoinPaths,
  LiveDiff,
  RelationshipParams,
  Relationships,
  SampleParams,
  SampleValues,
  SchemaCacheInvalidate,
  SchemaCacheStats,
  SchemaChanges,
  SchemaFilterParams,
  SchemaFilterResult,
  SchemaLinkParams,
  SchemaLinkResult,
  SchemaOverview,
  SchemaSearchParams,
  SchemaSearchResult,
  SchemaText,
  SchemaTextParams,
  TableSample,
  WarmupResult
} from "../domain/SchemaViews"
import { docs, RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: ConnectionName })

const get = <N extends string, P extends string>(name: N, path: P, scope: "read" | "query") =>
  HttpApiEndpoint.get(name, `/connections/:name/schema${path}`).setPath(ByName).addError(GovernedQueryErrors).annotate(RequiredScope, scope)
const read = <N extends string, P extends string>(name: N, path: P) => get(name, path, "read")
// Row values (samples, value counts, min and max) are data, not metadata: they need the query scope as SQL does.
const rows = <N extends string, P extends string>(name: N, path: P) => get(name, path, "query")

const ROWS = "Reads rows with governed queries, so it needs the `query` scope: blocked tables are refused, PII is masked, budgets are charged (429 when spent) and each query is audited."

export class SchemaApi extends HttpApiGroup.make("schema")
  .add(
    read("get", "")
      .addSuccess(SchemaSnapshot)
      .annotateContext(docs("Get a connection's schema", "The connection's latest schema snapshot as JSON: every visible table with its columns, keys and statistics. A connection never scanned is scanned first."))
  )
  .add(
    read("grouped", "/grouped")
      .addSuccess(GroupedSchema)
      .annotateContext(docs("Get the schema grouped by database schema", "The latest snapshot's visible tables, grouped by the database schema (namespace) they belong to."))
  )
  .add(
    read("compact", "/compact")
      .setUrlParams(SchemaTextParams)
      .addSuccess(SchemaText)
      .annotateContext(docs("Get the schema as compact text", "The schema as one compact line per table, most important first, sized for a language model's context; `max_tables` caps the tables listed (default 50)."))
  )
  .add(
    read("ddl", "/ddl")
      .setUrlParams(SchemaTextParams)
      .addSuccess(SchemaText)
      .annotateContext(docs("Get the schema as DDL", "The schema as CREATE TABLE statements in the connection's dialect; `max_tables` caps the tables listed (default 50)."))
  )
  .add(
    read("overview", "/overview")
      .addSuccess(SchemaOverview)
      .annotateContext(
        docs(
          "Get a schema overview",
          "Counts of schemas, tables, views, columns and foreign keys, the largest and most connected tables, and token estimates for each text form, with the form recommended for this schema's size."
        )
      )
  )
  .add(
    read("search", "/search")
      .setUrlParams(SchemaSearchParams)
      .addSuccess(SchemaSearchResult)
      .annotateContext(docs("Search the schema", "Ranked full-text search of table and column names and comments for `q`; `limit` caps tables and columns each (default 20)."))
  )
  .add(
    read("filter", "/filter")
      .setUrlParams(SchemaFilterParams)
      .addSuccess(SchemaFilterResult)
      .annotateContext(
        docs(
          "Filter tables",
          "Tables matching every filter given: schema, table, column and type patterns (`*` matches any run of characters, case-insensitively), kind, foreign keys and minimum rows. Returns the total and up to `limit` tables (default 200)."
        )
      )
  )
  .add(
    read("link", "/link")
      .setUrlParams(SchemaLinkParams)
      .addSuccess(SchemaLinkResult)
      .annotateContext(
        docs(
          "Find the tables for a question",
          "Links a natural-language `question` to the tables most likely to answer it (and those needed to join them), described as DDL, compact text or JSON within `max_tokens`."
        )
      )
  )
  .add(
    read("agentContext", "/agent-context")
      .setUrlParams(AgentContextParams)
      .addSuccess(AgentContext)
      .annotateContext(
        docs(
          "Get schema context for an agent",
          "A text bundle describing the schema for an AI agent within `max_tokens` (default 8000), focused on `question` when given: full DDL for the most relevant tables (`full_ddl_tables`, default 8) and a compact line for the rest."
        )
      )
  )
  .add(
    read("relationships", "/relationships")
      .setUrlParams(RelationshipParams)
      .addSuccess(Relationships)
      .annotateContext(
        docs("List relationships", "The schema's foreign keys, and with `include_inferred=true` relationships inferred from column names and types, each with a confidence; `table` narrows them to one table.")
      )
  )
  .add(
    read("joinPaths", "/join-paths")
      .setUrlParams(JoinPathParams)
      .addSuccess(JoinPaths)
      .annotateContext(docs("Find join paths", "Ways to join table `from` to table `to` in at most `max_hops` joins, each with its join conditions, a confidence and a SQL FROM clause."))
  )
  .add(
    rows("samples", "/samples")
      .setUrlParams(SampleParams)
      .addSuccess(TableSample)
      .addError(BudgetExhausted)
      .annotate(RateClass, "expensive")
      .annotateContext(docs("Sample a table's rows", `A few rows of \`table\` (\`limit\`, default 5). ${ROWS}`))
  )
  .add(
    rows("sampleValues", "/sample-values")
      .setUrlParams(SampleParams)
      .addSuccess(SampleValues)
      .addError(BudgetExhausted)
      .annotate(RateClass, "expensive")
      .annotateContext(docs("Sample a table's values", `Example values of each column of \`table\` (\`limit\` per column, default 5). ${ROWS}`))
  )
  .add(
    HttpApiEndpoint.post("explore", "/connections/:name/schema/explore")
      .setPath(ByName)
      .setPayload(ExploreRequest)
      .addSuccess(ColumnExploration)
      .addError(GovernedQueryErrors)
      .addError(BudgetExhausted)
      .annotate(RequiredScope, "query")
      .annotate(RateClass, "expensive")
      .annotateContext(docs("Explore a column's values", `Row, distinct and null counts of one column and its most frequent values, optionally only those matching \`filter_pattern\`. ${ROWS}`))
  )
  .add(
    HttpApiEndpoint.post("exploreColumns", "/connections/:name/schema/explore-columns")
      .setPath(ByName)
      .setPayload(ExploreColumnsRequest)
      .addSuccess(ColumnsExploration)
      .addError(GovernedQueryErrors)
      .addError(BudgetExhausted)
      .annotate(RequiredScope, "query")
      .annotate(RateClass, "expensive")
      .annotateContext(docs("Explore a table's columns", `Per column of a table (or the ones named): type, keys, statistics (counts, min, max) and top values. ${ROWS}`))
  )
  .add(
    read("refreshStatus", "/refresh-status")
      .addSuccess(RefreshStatus)
      .annotateContext(docs("Get schema scan status", "The state of the connection's latest or running schema scan: its phase and progress, when it started and finished, any error, and the snapshot version it produced."))
  )
  .add(
    read("diff", "/diff")
      .addSuccess(LiveDiff)
      .annotate(RateClass, "expensive")
      .annotateContext(docs("Diff the live schema", "Reads the database's catalog now and compares it with the stored snapshot, storing nothing: added, removed and changed tables and columns."))
  )
  .add(
    HttpApiEndpoint.get("compare", "/connections/:name/schema/diff/:compare")
      .setPath(Schema.Struct({ name: ConnectionName, compare: ConnectionName }))
      .addSuccess(ConnectionsDiff)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Compare two connections' schemas", "What connection `compare` has that `name` has not, and the reverse, from their latest snapshots (a staging database against production, say)."))
  )
  .add(
    read("diffHistory", "/diff-history")
      .setUrlParams(PageParams)
      .addSuccess(SchemaChanges)
      .annotateContext(
        docs(
          "List a connection's schema changes",
          "The changes scans recorded for this connection, newest first. Paginated: pass `next_cursor` back as `cursor` for the next page (`limit` 1–500, default 50)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("changes", "/schema/changes")
      .setUrlParams(PageParams)
      .addSuccess(SchemaChanges)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "List schema changes",
          "The changes scans recorded across the organization's connections, newest first, without tables the caller may not see. Paginated: pass `next_cursor` back as `cursor` (`limit` 1–500, default 50)."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("refresh", "/connections/:name/schema/refresh")
      .setPath(ByName)
      .addSuccess(RefreshStatus, { status: 202 })
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
      .annotateContext(
        docs(
          "Rescan a connection's schema",
          "Starts a background scan of the connection's catalog (or joins the one running) and answers 202 with its status at once; poll `refresh-status` to follow it."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("warmup", "/connections/schema/warmup")
      .addSuccess(WarmupResult, { status: 202 })
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
      .annotateContext(docs("Scan every unscanned connection", "Starts a background scan of each of the organization's connections that has no snapshot yet; answers 202 with those started, already ready and skipped."))
  )
  .add(
    HttpApiEndpoint.get("cacheStats", "/schema-cache/stats")
      .addSuccess(SchemaCacheStats)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get schema cache statistics", "How many of the organization's snapshots, tables and search indexes this replica holds and how many scans are running, with the replica's cache counters (entries, hits, loads, scans)."))
  )
  .add(
    HttpApiEndpoint.post("cacheInvalidate", "/schema-cache/invalidate")
      .setPayload(SchemaCacheInvalidate)
      .addSuccess(Schema.Struct({ invalidated: Schema.Int }))
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs("Clear the schema cache", "Drops this replica's cached snapshots of one connection (`connection`) or all of the organization's; the next read loads the stored snapshot again. Rescans nothing.")
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(
    OpenApi.Description,
    "A connection's schema from its latest scan, in the forms tools and agents want: JSON, grouped, compact lines, DDL, an overview, search and filters, plus samples, diffs and scans. Tables the connection blocks are left out of all of them."
  ) {}
