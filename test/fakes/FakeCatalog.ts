/**
 * One small catalog the protocol fakes answer a schema scan with, each in its engine's terms: the rows
 * `informationSchemaCatalog` (Trino, Snowflake, BigQuery) and `clickhouseCatalog` select, in the column
 * order src/schema/catalog/CatalogQueries.ts documents.
 */

export type FakeEngine = "trino" | "clickhouse" | "snowflake" | "bigquery"
type TypeKind = "integer" | "text" | "decimal"

export interface FakeColumn {
  readonly name: string
  readonly type: TypeKind
  readonly nullable: boolean
  readonly comment?: string
}

export interface FakeTable {
  readonly name: string
  readonly kind: "table" | "view"
  readonly columns: ReadonlyArray<FakeColumn>
  readonly primaryKey: ReadonlyArray<string>
  /** ClickHouse's sorting key, of which the primary key is a prefix. */
  readonly sortKey: ReadonlyArray<string>
  readonly partitionKey?: string
  readonly rows?: number
  readonly bytes?: number
  readonly definition?: string
}

export const FAKE_SCHEMA = "shop"

/** In the catalog queries' order: by name, columns by position. */
export const FAKE_TABLES: ReadonlyArray<FakeTable> = [
  {
    name: "big_orders",
    kind: "view",
    columns: [
      { name: "id", type: "integer", nullable: false },
      { name: "total", type: "decimal", nullable: false }
    ],
    primaryKey: [],
    sortKey: [],
    definition: "SELECT id, total FROM shop.orders WHERE total > 100"
  },
  {
    name: "customers",
    kind: "table",
    columns: [
      { name: "id", type: "integer", nullable: false },
      { name: "email", type: "text", nullable: true, comment: "Where receipts go" }
    ],
    primaryKey: ["id"],
    sortKey: ["id"],
    rows: 1200,
    bytes: 48_000
  },
  {
    name: "orders",
    kind: "table",
    columns: [
      { name: "id", type: "integer", nullable: false },
      { name: "customer_id", type: "integer", nullable: false },
      { name: "total", type: "decimal", nullable: false }
    ],
    // Key order differs from column order, as a scan must keep it.
    primaryKey: ["customer_id", "id"],
    sortKey: ["customer_id", "id", "total"],
    partitionKey: "intDiv(id, 1000000)",
    rows: 5400,
    bytes: 262_144
  }
]

const TYPES: Record<FakeEngine, Record<TypeKind, string>> = {
  trino: { integer: "integer", text: "varchar", decimal: "decimal(12,2)" },
  clickhouse: { integer: "Int32", text: "String", decimal: "Decimal(12, 2)" },
  snowflake: { integer: "NUMBER", text: "TEXT", decimal: "NUMBER" },
  bigquery: { integer: "INT64", text: "STRING", decimal: "NUMERIC" }
}

/** The column's type as the engine's catalog names it; ClickHouse spells nullability in the type. */
export const typeOf = (engine: FakeEngine, column: FakeColumn) =>
  engine === "clickhouse" && column.nullable ? `Nullable(${TYPES.clickhouse[column.type]})` : TYPES[engine][column.type]

/** Result column names; the scan reads the columns by position. */
export const RELATION_COLUMNS = ["schema", "name", "kind", "comment", "row_estimate", "size_bytes", "definition", "partition_key", "engine", "sort_keys", "cluster_keys"]
export const COLUMN_COLUMNS = ["schema", "table", "name", "type", "nullable", "default", "comment", "primary_key", "distinct_estimate", "null_fraction"]

/** information_schema.tables: schema, name, kind (the query's `case` on table_type), the rest null. */
export const informationSchemaRelations = (): Array<Array<string | null>> =>
  FAKE_TABLES.map((t) => [FAKE_SCHEMA, t.name, t.kind, null, null, null, null, null, null, null, null])

/** information_schema.columns: schema, table, column, data_type, is_nullable as YES/NO, no default, the rest null. */
export const informationSchemaColumns = (engine: Exclude<FakeEngine, "clickhouse">): Array<Array<string | null>> =>
  FAKE_TABLES.flatMap((t) => t.columns.map((c) => [FAKE_SCHEMA, t.name, c.name, typeOf(engine, c), c.nullable ? "YES" : "NO", null, null, null, null, null]))

/** system.tables: 64-bit counts as JSON strings, as ClickHouse quotes them; the sorting key as toJSONString's text. */
export const clickhouseRelations = (): Array<Array<unknown>> =>
  FAKE_TABLES.map((t) => [
    FAKE_SCHEMA,
    t.name,
    t.kind,
    null,
    t.rows === undefined ? null : String(t.rows),
    t.bytes === undefined ? null : String(t.bytes),
    t.definition ?? null,
    t.partitionKey ?? null,
    t.kind === "view" ? "View" : "MergeTree",
    JSON.stringify(t.sortKey),
    null
  ])

/** system.columns: nullability from the type and is_in_primary_key as UInt8 (1/0). */
export const clickhouseColumns = (): Array<Array<unknown>> =>
  FAKE_TABLES.flatMap((t) =>
    t.columns.map((c) => [FAKE_SCHEMA, t.name, c.name, typeOf("clickhouse", c), c.nullable ? 1 : 0, null, c.comment ?? null, t.primaryKey.includes(c.name) ? 1 : 0, null, null])
  )

/** system.tables' primary keys, as the scan's keys read selects them: the key's columns in key order. */
export const clickhouseKeys = (): Array<Array<unknown>> =>
  FAKE_TABLES.filter((t) => t.primaryKey.length > 0).map((t) => [FAKE_SCHEMA, t.name, "primary_key", "p", JSON.stringify(t.primaryKey), null, null, null])
