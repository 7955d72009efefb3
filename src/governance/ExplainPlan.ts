import type { DryRun, QueryResult } from "../../layers/connectors/Connector"
import type { DbType } from "../domain/Connection"

// A full scan estimated above this many rows, or a scan of this many bytes, is worth a warning before the query runs.
const LARGE_SCAN_ROWS = 100_000
const LARGE_SCAN_BYTES = 10 * 2 ** 30

/** The EXPLAIN form each engine answers without running the statement; undefined where there is none (BigQuery dry-runs instead). */
export const explainStatement = (dbType: DbType, sql: string): string | undefined => {
  switch (dbType) {
    case "postgresql":
      return `EXPLAIN (FORMAT JSON) ${sql}`
    case "mysql":
      return `EXPLAIN FORMAT=JSON ${sql}`
    case "sqlite":
      return `EXPLAIN QUERY PLAN ${sql}`
    case "duckdb":
      return `EXPLAIN (FORMAT JSON) ${sql}`
    case "redshift":
    case "clickhouse":
    case "trino":
    case "snowflake":
    case "databricks":
      return `EXPLAIN ${sql}`
    case "bigquery":
    case "mssql":
      return undefined
  }
}

export interface PlanSummary {
  readonly plan: unknown
  readonly estimated_rows: number | null
  readonly estimated_cost: number | null
  readonly estimated_bytes: number | null
  /** Rows the plan reads from tables (its leaves), which is what engines bill by or spend time on. */
  readonly scanned_rows: number | null
  /** What running it would cost in US dollars, where the engine's estimate allows a guess. */
  readonly estimated_usd: number | null
  readonly warnings: ReadonlyArray<string>
}

/**
 * US dollars per row scanned: a rough list-price guess per engine, for approval thresholds and
 * estimates, not billing. Engines on the customer's own machines cost nothing per query.
 */
const USD_PER_SCANNED_ROW: Record<DbType, number> = {
  postgresql: 3e-7,
  redshift: 5e-7,
  mysql: 3e-7,
  snowflake: 1e-6,
  bigquery: 6.25e-6,
  clickhouse: 1e-7,
  databricks: 1e-6,
  duckdb: 0,
  sqlite: 0,
  mssql: 4e-7,
  trino: 2e-7
}
// BigQuery on demand bills bytes scanned, which its dry run states exactly.
const BIGQUERY_USD_PER_BYTE = 6.25 / 2 ** 40

// The rows a statement is taken to read in a second, to turn a budget in dollars into a time limit while it runs: slow on purpose, so a
// statement that reads no more than its budget's worth of rows is not stopped by it.
const SCANNED_ROWS_PER_SECOND = 250_000

/**
 * What a budget in dollars allows a running statement, at the same list prices as the estimates:
 * BigQuery the bytes it may bill (its jobs stop past them), the other priced engines the seconds it
 * takes to read the budget's worth of rows at a slow rate. Nothing where reading costs nothing.
 */
export const runtimeCapOf = (dbType: DbType, usd: number): { readonly seconds?: number; readonly bytes?: number } =>
  dbType === "bigquery"
    ? { bytes: Math.max(1, Math.floor(usd / BIGQUERY_USD_PER_BYTE)) }
    : USD_PER_SCANNED_ROW[dbType] === 0
      ? {}
      : { seconds: usd / (USD_PER_SCANNED_ROW[dbType] * SCANNED_ROWS_PER_SECOND) }

/** What a statement that ran cost at the same list prices: BigQuery the bytes it billed, the other priced engines the time it read for. */
export const usdOfRun = (dbType: DbType, run: { readonly execution_ms: number; readonly bytes_scanned: number | null }): number =>
  dbType === "bigquery" ? (run.bytes_scanned ?? 0) * BIGQUERY_USD_PER_BYTE : USD_PER_SCANNED_ROW[dbType] * SCANNED_ROWS_PER_SECOND * (run.execution_ms / 1000)

const priced = (dbType: DbType, summary: Omit<PlanSummary, "estimated_usd">): PlanSummary => ({
  ...summary,
  estimated_usd:
    USD_PER_SCANNED_ROW[dbType] === 0
      ? 0
      : dbType === "bigquery" && summary.estimated_bytes !== null
        ? summary.estimated_bytes * BIGQUERY_USD_PER_BYTE
        : summary.scanned_rows === null
          ? null
          : summary.scanned_rows * USD_PER_SCANNED_ROW[dbType]
})

/** BigQuery's dry run: what it would scan, which is what it would bill. */
export const dryRunSummary = (dryRun: DryRun): PlanSummary =>
  priced("bigquery", {
    plan: { statement_type: dryRun.statementType, total_bytes_processed: dryRun.bytesProcessed },
    estimated_rows: null,
    estimated_cost: null,
    estimated_bytes: dryRun.bytesProcessed,
    scanned_rows: null,
    warnings: dryRun.bytesProcessed >= LARGE_SCAN_BYTES ? [`would scan about ${(dryRun.bytesProcessed / 2 ** 30).toFixed(1)} GiB`] : []
  })

const parseJson = (value: unknown): unknown => {
  if (typeof value !== "string") return value
  try {
    return JSON.parse(value)
  } catch {
    return value
  }
}

type PgNode = {
  "Node Type"?: string
  "Relation Name"?: string
  "Parent Relationship"?: string
  "Plan Rows"?: number
  "Total Cost"?: number
  "Parallel Aware"?: boolean
  "Workers Planned"?: number
  Plans?: Array<PgNode>
}

/**
 * How many times a child of `node` runs for each run of `node`: a nested loop's inner side once
 * per row of its outer side, a correlated subplan once per row of its parent; anything else once.
 */
const runsPerParentRun = (node: PgNode, child: PgNode) => {
  if (node["Node Type"] === "Nested Loop" && child["Parent Relationship"] === "Inner") {
    return Math.max(1, node.Plans?.find((c) => c["Parent Relationship"] === "Outer")?.["Plan Rows"] ?? 1)
  }
  return child["Parent Relationship"] === "SubPlan" ? Math.max(1, node["Plan Rows"] ?? 1) : 1
}

// Nodes that read all their input before their first row, whatever a Limit above them asks for (conservatively: some aggregates stream).
const READS_ALL_FIRST: ReadonlySet<string> = new Set(["Sort", "Incremental Sort", "Aggregate", "Hash", "SetOp", "WindowAgg"])

/** PostgreSQL's parallel divisor: a parallel-aware node's rows are per process, the workers' and the leader's share. */
const parallelDivisor = (workers: number) => workers + Math.max(0, 1 - 0.3 * workers)

const postgresSummary = (plan: unknown): Omit<PlanSummary, "estimated_usd"> => {
  const root = (Array.isArray(plan) ? (plan[0] as { Plan?: PgNode })?.Plan : undefined) ?? {}
  const warnings: Array<string> = []
  // Rows read by the plan's leaves, each times the runs of the loops it is in (a plan states rows per run).
  let scanned = 0
  // `share` is the part of a node's output that is read: a Limit stops a streaming subtree early,
  // down to a node that reads all its input first. `parallel` turns a parallel-aware node's rows per process into rows.
  const walk = (node: PgNode, runs: number, share: number, parallel: number) => {
    const rows = (node["Plan Rows"] ?? 0) * (node["Parallel Aware"] === true ? parallel : 1)
    if (node["Node Type"] === "Seq Scan" && rows * runs * share >= LARGE_SCAN_ROWS) {
      warnings.push(`full scan of ${node["Relation Name"]} (about ${Math.round(rows)} rows)`)
    }
    if ((node.Plans ?? []).length === 0) scanned += rows * runs * share
    const type = node["Node Type"] ?? ""
    const workers = type === "Gather" || type === "Gather Merge" ? parallelDivisor(node["Workers Planned"] ?? 0) : parallel
    for (const child of node.Plans ?? []) {
      const childShare = READS_ALL_FIRST.has(type) ? 1 : type === "Limit" ? share * Math.min(1, (node["Plan Rows"] ?? 0) / Math.max(1, child["Plan Rows"] ?? 1)) : share
      walk(child, runs * runsPerParentRun(node, child), childShare, workers)
    }
  }
  walk(root, 1, 1, 1)
  return {
    plan,
    estimated_rows: root["Plan Rows"] ?? null,
    estimated_cost: root["Total Cost"] ?? null,
    estimated_bytes: null,
    scanned_rows: Math.round(scanned),
    warnings
  }
}

type MysqlTable = { table_name?: string; access_type?: string; rows_examined_per_scan?: number; rows_produced_per_join?: number }

const mysqlSummary = (plan: unknown): Omit<PlanSummary, "estimated_usd"> => {
  const block = (plan as { query_block?: { cost_info?: { query_cost?: string } } })?.query_block
  const warnings: Array<string> = []
  let rows: number | null = null
  let scanned: number | null = null
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk)
    if (typeof value !== "object" || value === null) return
    const table = (value as { table?: MysqlTable }).table
    if (table !== undefined) {
      rows = Math.max(rows ?? 0, table.rows_produced_per_join ?? table.rows_examined_per_scan ?? 0)
      scanned = (scanned ?? 0) + (table.rows_examined_per_scan ?? 0)
      if (table.access_type === "ALL" && (table.rows_examined_per_scan ?? 0) >= LARGE_SCAN_ROWS) {
        warnings.push(`full scan of ${table.table_name} (about ${table.rows_examined_per_scan} rows)`)
      }
    }
    Object.values(value).forEach(walk)
  }
  walk(block)
  const cost = Number(block?.cost_info?.query_cost)
  return { plan, estimated_rows: rows, estimated_cost: Number.isFinite(cost) ? cost : null, estimated_bytes: null, scanned_rows: scanned, warnings }
}

type DuckdbNode = { name?: string; children?: Array<DuckdbNode>; extra_info?: Record<string, unknown> }

const duckdbSummary = (plan: unknown): Omit<PlanSummary, "estimated_usd"> => {
  const root = Array.isArray(plan) ? (plan[0] as DuckdbNode | undefined) : undefined
  const rows = Number(root?.extra_info?.["Estimated Cardinality"])
  return { plan, estimated_rows: Number.isFinite(rows) ? rows : null, estimated_cost: null, estimated_bytes: null, scanned_rows: null, warnings: [] }
}

/** The plan as the engine gave it, with row and cost estimates and warnings where the engine states them. */
export const summarizePlan = (dbType: DbType, result: QueryResult): PlanSummary => {
  const unknown = { estimated_rows: null, estimated_cost: null, estimated_bytes: null, scanned_rows: null }
  if (dbType === "postgresql") return priced(dbType, postgresSummary(parseJson(result.rows[0]?.[0])))
  if (dbType === "mysql") return priced(dbType, mysqlSummary(parseJson(result.rows[0]?.[0])))
  if (dbType === "duckdb") return priced(dbType, duckdbSummary(parseJson(result.rows[0]?.[1])))
  if (dbType === "sqlite") {
    const details = result.rows.map((row) => String(row.at(-1)))
    const warnings = details.filter((d) => /^SCAN /.test(d) && !/USING (COVERING )?INDEX/.test(d)).map((d) => `full ${d.toLowerCase()}`)
    return priced(dbType, { plan: details, ...unknown, warnings })
  }
  const lines = result.rows.map((row) => row.map((cell) => String(cell)).join("\t"))
  return priced(dbType, { plan: lines, ...unknown, warnings: [] })
}

// The fields of a plan node that say what the engine does, not what it computes with: an allow-list
// per engine. Anything else (conditions, outputs, keys, widths, per-node estimates, constants the
// optimizer took from the data, such as DuckDB's compression bounds) can hold a value or a statistic of one.
const POSTGRES_SHAPE = new Set([
  "Plan", "Plans", "Node Type", "Parent Relationship", "Relation Name", "Schema", "Alias", "Join Type", "Strategy", "Partial Mode",
  "Parallel Aware", "Async Capable", "Scan Direction", "Index Name", "Subplan Name", "CTE Name", "Function Name", "Command",
  "Workers Planned", "Inner Unique"
])
const MYSQL_SHAPE = new Set([
  "query_block", "select_id", "table", "table_name", "access_type", "possible_keys", "key", "used_key_parts", "using_index",
  "nested_loop", "ordering_operation", "grouping_operation", "duplicates_removal", "filesort", "temporary_table",
  "using_temporary_table", "using_filesort", "read_sorted_file", "materialized_from_subquery", "materialized", "subqueries",
  "attached_subqueries", "union_result", "query_specifications", "block-nl-join", "join_type", "derived"
])
const DUCKDB_SHAPE = new Set(["name", "children", "extra_info", "Table", "Type", "Join Type"])

const keepOnly = (fields: ReadonlySet<string>) => {
  const kept = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(kept)
    if (typeof value !== "object" || value === null) return value
    return Object.fromEntries(Object.entries(value).flatMap(([field, inner]) => (fields.has(field) ? [[field, kept(inner)]] : [])))
  }
  return kept
}

/**
 * A plan for a statement that reads columns with PII rules, as the caller may see it: the engine
 * planned it over the raw columns, so only the shape of its plan is shown (operators, relations,
 * indexes, joins). SQLite's plan lines hold no values; the engines whose plans are text are withheld.
 * The estimates stay: they are what the statement is priced and approved by.
 */
export const planShape = (dbType: DbType, summary: PlanSummary): PlanSummary => {
  switch (dbType) {
    case "postgresql":
      return { ...summary, plan: keepOnly(POSTGRES_SHAPE)(summary.plan) }
    case "mysql":
      return { ...summary, plan: keepOnly(MYSQL_SHAPE)(summary.plan) }
    case "duckdb":
      return { ...summary, plan: keepOnly(DUCKDB_SHAPE)(summary.plan) }
    case "sqlite":
    case "bigquery":
      return summary
    default:
      return { ...summary, plan: null, warnings: [...summary.warnings, "The plan's text is withheld: the statement reads columns with PII rules"] }
  }
}
