import { Effect } from "effect"
import { InvalidRequest } from "../domain/Errors"
import { rulesForTable } from "../domain/Pii"
import type { Principal } from "../domain/Principal"
import { type ColumnInfo, qualifiedName, type TableInfo } from "../domain/SchemaSnapshot"
import { asText, quoteIdentifier, quoteString } from "../governance/Catalog"
import { findColumn, findTable } from "../schema/SchemaFilter"
import { Connections } from "./Connections"
import { type ChildQueryContext, Queries } from "./Queries"
import { Schemas, type SchemaView } from "./Schemas"

/** Where the explorer's governed queries report, each to be audited as its own row. */

const VALUE_ROWS = 200
const DEFAULT_VALUE_LIMIT = 5
const MAX_STATS_COLUMNS = 30
// min/max only where every engine orders the type; booleans, JSON and arrays have no min on some.
const ORDERABLE = /int|numeric|decimal|number|float|double|real|money|date|time|char|text|string|uuid/i

const distinctValues = (rows: ReadonlyArray<ReadonlyArray<unknown>>, index: number, limit: number) => {
  const seen = new Map<string, unknown>()
  for (const row of rows) {
    const value = row[index]
    if (value === null || value === undefined) continue
    const key = typeof value === "object" ? JSON.stringify(value) : String(value)
    if (!seen.has(key)) seen.set(key, value)
    if (seen.size >= limit) break
  }
  return [...seen.values()]
}

/**
 * Samples, value counts and column statistics of one table, every one of them a governed query:
 * blocked tables refused, PII masked by lineage, budgets charged, each query audited. Nothing here
 * reads a customer database any other way.
 */
export class SchemaExplorer extends Effect.Service<SchemaExplorer>()("sluice/SchemaExplorer", {
  effect: Effect.gen(function* () {
    const schemas = yield* Schemas
    const queries = yield* Queries
    const connections = yield* Connections

    const governed = (principal: Principal, view: SchemaView, sql: string, rowLimit: number, context: ChildQueryContext) =>
      queries.runChild(principal, view.snapshot.connection, sql, rowLimit, context)

    const from = (view: SchemaView, table: TableInfo) => {
      const q = (id: string) => quoteIdentifier(view.connection.db_type, id)
      return `${q(table.schema)}.${q(table.name)}`
    }

    /** The PII rules the executor applies to this table: for a view, those derived through its definition too. */
    const rulesOf = (principal: Principal, view: SchemaView, table: TableInfo) =>
      Effect.gen(function* () {
        const target = yield* connections.target(principal, view.snapshot.connection)
        const policy = yield* schemas.piiFor(target, `select * from ${from(view, table)}`)
        return rulesForTable(policy.rules, table.schema, table.name)
      })

    const open = (principal: Principal, connection: string, tableName: string) =>
      Effect.gen(function* () {
        const view = yield* schemas.view(principal, connection)
        return { view, table: yield* findTable(view.tables, tableName, view.snapshot.connection) }
      })

    /** A few whole rows of the table. */
    const samples = Effect.fn("SchemaExplorer.samples")(function* (principal: Principal, connection: string, tableName: string, limit: number, context: ChildQueryContext) {
      const { view, table } = yield* open(principal, connection, tableName)
      const result = yield* governed(principal, view, `select * from ${from(view, table)}`, limit, context)
      return { connection, table: qualifiedName(table), columns: result.columns, rows: result.rows, row_count: result.row_count, pii_masked: result.pii_masked }
    })

    /** Up to `limit` distinct values of each column, from the first rows read. */
    const sampleValues = Effect.fn("SchemaExplorer.sampleValues")(function* (principal: Principal, connection: string, tableName: string, limit: number, context: ChildQueryContext) {
      const { view, table } = yield* open(principal, connection, tableName)
      const result = yield* governed(principal, view, `select * from ${from(view, table)}`, VALUE_ROWS, context)
      return {
        connection,
        table: qualifiedName(table),
        columns: result.columns.map((c, i) => ({ name: c.name, values: distinctValues(result.rows, i, limit) })),
        pii_masked: result.pii_masked
      }
    })

    /** One column: how many rows, distinct values and NULLs, and its most frequent values (optionally those LIKE a pattern). */
    const explore = Effect.fn("SchemaExplorer.explore")(function* (
      principal: Principal,
      request: { readonly connection: string; readonly table: string; readonly column: string; readonly limit: number; readonly filter_pattern?: string | undefined },
      context: ChildQueryContext
    ) {
      const { view, table } = yield* open(principal, request.connection, request.table)
      const column = yield* findColumn(table, request.column)
      const dbType = view.connection.db_type
      const c = quoteIdentifier(dbType, column.name)
      if (request.filter_pattern !== undefined) {
        const masked = (yield* rulesOf(principal, view, table)).some((r) => r.column.toLowerCase() === column.name.toLowerCase())
        // Counting the rows LIKE a pattern would reveal a masked column's values one guess at a time.
        if (masked) return yield* new InvalidRequest({ message: `filter_pattern is not allowed on ${column.name}: a PII rule masks it` })
      }
      const stats = yield* governed(
        principal,
        view,
        `select count(*) as total_rows, count(distinct ${c}) as distinct_count, count(*) - count(${c}) as null_count from ${from(view, table)}`,
        1,
        context
      )
      const where = request.filter_pattern === undefined ? "" : ` where ${asText(dbType, c)} like ${quoteString(dbType, request.filter_pattern)}`
      const values = yield* governed(
        principal,
        view,
        `select ${c} as value, count(*) as count from ${from(view, table)}${where} group by ${c} order by count(*) desc`,
        request.limit,
        context
      )
      const [total, distinct, nulls] = (stats.rows[0] ?? []).map(Number)
      return {
        connection: request.connection,
        table: qualifiedName(table),
        column: column.name,
        statistics: {
          total_rows: total ?? 0,
          distinct_count: distinct ?? 0,
          null_count: nulls ?? 0,
          null_pct: total ? Math.round(((nulls ?? 0) / total) * 10_000) / 100 : 0
        },
        values: values.rows.map(([value, n]) => ({ value, count: Number(n) })),
        filter: request.filter_pattern ?? null,
        pii_masked: [...stats.pii_masked, ...values.pii_masked]
      }
    })

    /** Every (or the named) column's metadata, with statistics from one aggregate query and distinct values from a sample. */
    /** A column's distinct values in a sample, found by name: a dropped column is left out of the result, and the others move up. */
    const valuesOf = (sample: { readonly columns: ReadonlyArray<{ readonly name: string }>; readonly rows: ReadonlyArray<ReadonlyArray<unknown>> }, name: string, limit: number) => {
      const at = sample.columns.findIndex((column) => column.name.toLowerCase() === name.toLowerCase())
      return at < 0 ? [] : distinctValues(sample.rows, at, limit)
    }

    const exploreColumns = Effect.fn("SchemaExplorer.exploreColumns")(function* (
      principal: Principal,
      request: {
        readonly connection: string
        readonly table: string
        readonly columns?: ReadonlyArray<string> | undefined
        readonly include_stats?: boolean | undefined
        readonly include_values?: boolean | undefined
        readonly value_limit?: number | undefined
      },
      context: ChildQueryContext
    ) {
      const { view, table } = yield* open(principal, request.connection, request.table)
      const chosen: ReadonlyArray<ColumnInfo> =
        request.columns === undefined ? table.columns.slice(0, MAX_STATS_COLUMNS) : yield* Effect.forEach(request.columns, (name) => findColumn(table, name))
      const dbType = view.connection.db_type
      const q = (id: string) => quoteIdentifier(dbType, id)
      const pii = new Map((yield* rulesOf(principal, view, table)).map((r) => [r.column.toLowerCase(), r.action]))
      const stats = (request.include_stats ?? true)
        ? yield* governed(
            principal,
            view,
            `select count(*) as total_rows, ${chosen
              .map((c, i) => {
                const orderable = ORDERABLE.test(c.type)
                return `count(distinct ${q(c.name)}) as d${i}, count(${q(c.name)}) as n${i}, ${orderable ? `min(${q(c.name)})` : "null"} as lo${i}, ${orderable ? `max(${q(c.name)})` : "null"} as hi${i}`
              })
              .join(", ")} from ${from(view, table)}`,
            1,
            context
          )
        : undefined
      const sample = (request.include_values ?? true)
        ? yield* governed(principal, view, `select ${chosen.map((c) => q(c.name)).join(", ")} from ${from(view, table)}`, VALUE_ROWS, context)
        : undefined
      const aggregate = stats?.rows[0] ?? []
      const total = Number(aggregate[0] ?? 0)
      return {
        connection: request.connection,
        table: qualifiedName(table),
        kind: table.kind,
        row_estimate: table.row_estimate,
        columns: chosen.map((c, i) => {
          const nonNull = Number(aggregate[2 + i * 4] ?? 0)
          return {
            name: c.name,
            type: c.type,
            nullable: c.nullable,
            primary_key: c.primary_key,
            comment: c.comment,
            pii: pii.get(c.name.toLowerCase()) ?? null,
            ...(stats === undefined
              ? {}
              : {
                  stats: {
                    distinct_count: Number(aggregate[1 + i * 4] ?? 0),
                    null_count: total - nonNull,
                    null_pct: total === 0 ? 0 : Math.round(((total - nonNull) / total) * 10_000) / 100,
                    min: aggregate[3 + i * 4] ?? null,
                    max: aggregate[4 + i * 4] ?? null
                  }
                }),
            ...(sample === undefined ? {} : { values: valuesOf(sample, c.name, request.value_limit ?? DEFAULT_VALUE_LIMIT) })
          }
        }),
        total_rows: stats === undefined ? null : total,
        pii_masked: [...(stats?.pii_masked ?? []), ...(sample?.pii_masked ?? [])]
      }
    })

    return { samples, sampleValues, explore, exploreColumns } as const
  }),
  dependencies: [Connections.Default, Queries.Default, Schemas.Default]
}) {}
