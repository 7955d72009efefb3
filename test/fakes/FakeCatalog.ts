/**
 * One small catalog the protocol fakes answer a schema scan with, each in its engine's terms: the rows
 * the Trino, Snowflake, BigQuery and ClickHouse catalogs (src/schema/catalog) select, in the column
 * order src/schema/catalog/CatalogQueries.ts documents, and Snowflake's SHOW … KEYS as Snowflake words it.
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
  readonly comment?: string
  readonly columns: ReadonlyArray<FakeColumn>
  readonly primaryKey: ReadonlyArray<string>
  readonly uniqueKey?: ReadonlyArray<string>
  readonly foreignKey?: { readonly name: string; readonly columns: ReadonlyArray<string>; readonly table: string; readonly references: ReadonlyArray<string> }
  /** Snowflake's clustering key and BigQuery's clustering columns. */
  readonly clusterKey?: ReadonlyArray<string>
  /** BigQuery's partitioning column. */
  readonly partitionColumn?: string
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
    comment: "People who buy",
    columns: [
      { name: "id", type: "integer", nullable: false },
      { name: "email", type: "text", nullable: true, comment: "Where receipts go" }
    ],
    primaryKey: ["id"],
    uniqueKey: ["email"],
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
    foreignKey: { name: "orders_customer", columns: ["customer_id"], table: "customers", references: ["id"] },
    sortKey: ["customer_id", "id", "total"],
    // An expression among the columns, as Snowflake allows.
    clusterKey: ["customer_id", "round(total, 0)"],
    partitionColumn: "id",
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

/**
 * information_schema.tables joined to .views: schema, name, kind (the query's `case` on table_type), the
 * view's definition; Snowflake's tables view adds the comment, rows, bytes and clustering key.
 */
export const informationSchemaRelations = (engine: Exclude<FakeEngine, "clickhouse">): Array<Array<string | null>> =>
  FAKE_TABLES.map((t) => {
    const snowflake = engine === "snowflake"
    return [
      FAKE_SCHEMA,
      t.name,
      t.kind,
      snowflake ? (t.comment ?? null) : null,
      snowflake && t.rows !== undefined ? String(t.rows) : null,
      snowflake && t.bytes !== undefined ? String(t.bytes) : null,
      t.definition ?? null,
      null,
      null,
      null,
      snowflake && t.clusterKey !== undefined ? `LINEAR(${t.clusterKey.join(", ")})` : null
    ]
  })

/** information_schema.columns: schema, table, column, data_type, is_nullable as YES/NO, no default, the comment where the engine keeps one. */
export const informationSchemaColumns = (engine: Exclude<FakeEngine, "clickhouse">): Array<Array<string | null>> =>
  FAKE_TABLES.flatMap((t) =>
    t.columns.map((c) => [FAKE_SCHEMA, t.name, c.name, typeOf(engine, c), c.nullable ? "YES" : "NO", null, engine === "trino" ? null : (c.comment ?? null), null, null, null])
  )

/** Rows of a facts read: schema, table, fact, value. */
export const factRows = (fact: "comment" | "row_estimate" | "size_bytes" | "partition_key" | "cluster_key"): Array<Array<string>> =>
  FAKE_TABLES.flatMap((t) => {
    const values =
      fact === "comment" ? [t.comment] : fact === "row_estimate" ? [t.rows] : fact === "size_bytes" ? [t.bytes] : fact === "partition_key" ? [t.partitionColumn] : (t.clusterKey ?? [])
    return values.filter((v) => v !== undefined).map((v) => [FAKE_SCHEMA, t.name, fact, String(v)])
  })

/** Key-column rows as the information_schema key read selects them: schema, table, name, kind, column, ref schema, ref table, ref column. */
export const keyColumnRows = (): Array<Array<string | null>> =>
  FAKE_TABLES.flatMap((t) => [
    ...t.primaryKey.map((c) => [FAKE_SCHEMA, t.name, `${t.name}_pk`, "p", c, null, null, null]),
    ...(t.foreignKey === undefined
      ? []
      : t.foreignKey.columns.map((c, i) => [FAKE_SCHEMA, t.name, t.foreignKey!.name, "f", c, FAKE_SCHEMA, t.foreignKey!.table, t.foreignKey!.references[i]!]))
  ])

/**
 * SHOW PRIMARY / UNIQUE / IMPORTED KEYS IN DATABASE with Snowflake's columns, one row per key column,
 * the last column of each key first (Snowflake does not promise an order; key_sequence gives it).
 */
export const snowflakeShowKeys = (kind: "primary" | "unique" | "imported") => {
  const created = "2026-01-01 00:00:00.000 -0800"
  if (kind === "imported") {
    const columns = ["created_on", "pk_database_name", "pk_schema_name", "pk_table_name", "pk_column_name", "fk_database_name", "fk_schema_name", "fk_table_name", "fk_column_name", "key_sequence", "update_rule", "delete_rule", "fk_name", "pk_name", "deferrability", "rely", "comment"]
    const rows = FAKE_TABLES.flatMap((t) =>
      t.foreignKey === undefined
        ? []
        : t.foreignKey.columns.map((c, i) => [created, "DB", FAKE_SCHEMA, t.foreignKey!.table, t.foreignKey!.references[i]!, "DB", FAKE_SCHEMA, t.name, c, String(i + 1), "NO ACTION", "NO ACTION", t.foreignKey!.name, `${t.foreignKey!.table}_pk`, "NOT DEFERRABLE", "false", null]).reverse()
    )
    return { columns, rows }
  }
  const columns = ["created_on", "database_name", "schema_name", "table_name", "column_name", "key_sequence", "constraint_name", "rely", "comment"]
  const rows = FAKE_TABLES.flatMap((t) => {
    const key = kind === "primary" ? t.primaryKey : (t.uniqueKey ?? [])
    return key.map((c, i) => [created, "DB", FAKE_SCHEMA, t.name, c, String(i + 1), `${t.name}_${kind === "primary" ? "pk" : "uk"}`, "false", null]).reverse()
  })
  return { columns, rows }
}

/** system.tables: 64-bit counts as JSON strings, as ClickHouse quotes them; the sorting key as toJSONString's text. */
export const clickhouseRelations = (): Array<Array<unknown>> =>
  FAKE_TABLES.map((t) => [
    FAKE_SCHEMA,
    t.name,
    t.kind,
    t.comment ?? null,
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
