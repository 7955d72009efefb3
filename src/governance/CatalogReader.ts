import { Effect } from "effect"
import { ConnectorPools, type PoolTarget } from "../../layers/connectors/ConnectorPools"
import { InvalidRequest } from "../domain/Errors"
import { descendantSet, type NamedRelation } from "../schema/catalog/CatalogQueries"
import { catalogFor, catalogGap } from "../schema/catalog/Catalogs"
import { type CatalogScan, scanCatalog } from "../schema/CatalogScan"
import { columnsQuery } from "./Catalog"
import { fromConnector } from "./GovernedExecutor"

const MAX_CATALOG_ROWS = 2_000_000
const CATALOG_TIMEOUT_MS = 300_000

/**
 * The other door to a database, beside the governed executor: it runs only the catalog statements
 * Sluice writes itself (never a caller's SQL), which return metadata — names, types, keys,
 * comments, estimates — and no customer rows.
 */
export class CatalogReader extends Effect.Service<CatalogReader>()("sluice/CatalogReader", {
  effect: Effect.gen(function* () {
    const pools = yield* ConnectorPools

    // Failures as every caller reports them: a timeout, a refused statement, or an unreachable database.
    const read = (target: PoolTarget, sql: string) =>
      pools.withPool(target, (pool) => pool.query(sql, { timeoutMs: CATALOG_TIMEOUT_MS, maxRows: MAX_CATALOG_ROWS })).pipe(
        Effect.mapError(fromConnector),
        Effect.filterOrFail(
          (result) => !result.truncated,
          () => new InvalidRequest({ message: `The catalog lists more than ${MAX_CATALOG_ROWS} entries; narrow the scan with schema_include` })
        ),
        Effect.map((result) => ({ columns: result.columns.map((c) => c.name), rows: result.rows }))
      )

    /** The connection's tables, views and their columns, keys and comments (a schema scan), reporting each phase. */
    const tables = (target: PoolTarget, progress: CatalogScan<unknown>["progress"]) => {
      const queries = catalogFor(target.connection)
      if ("needs" in queries) return Effect.fail(new InvalidRequest({ message: catalogGap(target.connection)! }))
      return scanCatalog(queries, {
        read: (sql) => read(target, sql),
        progress,
        include: target.connection.schema_include,
        exclude: target.connection.schema_exclude
      })
    }

    /** Schema, table and column name of every column, in table and column order. */
    const columns = (target: PoolTarget) => {
      const sql = columnsQuery(target.connection)
      if (sql === undefined) return Effect.fail(new InvalidRequest({ message: "Set the connection's dataset to list its columns" }))
      return Effect.map(read(target, sql), (result) => result.rows.map((row) => row.map(String) as [string, string, string]))
    }

    /**
     * Kind, definition and descendants of these relations as the catalog has them now (schema, name, kind,
     * definition); undefined where the engine's catalog is not read per statement.
     */
    const relationsNow = (target: PoolTarget, relations: ReadonlyArray<NamedRelation>) => {
      const queries = catalogFor(target.connection)
      if ("needs" in queries || queries.relationsNow === undefined || relations.length === 0) return Effect.succeed(undefined)
      return Effect.map(read(target, queries.relationsNow(relations)), (result) =>
        result.rows.map(([schema, name, kind, definition, descendants]) => ({
          schema: String(schema),
          name: String(name),
          kind: String(kind),
          definition: definition === null || definition === undefined ? null : String(definition),
          // Where the engine reports them: partitions and inheritance children at every level.
          descendants: descendants === null || descendants === undefined ? undefined : descendantSet(String(descendants).split("\u001f"))
        }))
      )
    }

    return { tables, columns, relationsNow } as const
  }),
  dependencies: [ConnectorPools.Default]
}) {}
