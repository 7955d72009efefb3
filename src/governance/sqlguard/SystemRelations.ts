/**
 * The engine's own schemas, per dialect: their relations are refused unless reviewed here as
 * metadata only. Statistics (pg_stats, mysql.column_stats, sqlite_stat4) hold sampled values,
 * activity and job views hold other sessions' SQL, authid and user tables hold password hashes,
 * file-settings views expose the server's configuration files, TOAST holds a table's values.
 */
export interface SystemRelations {
  /** Schemas (or databases) that belong to the engine, lower-cased. */
  readonly schemas: ReadonlySet<string>
  /** Catalogs (the first of three name parts) that belong to the engine: refused whole. */
  readonly catalogs: ReadonlySet<string>
  /** `schema.relation` of a system schema that holds only metadata. */
  readonly readable: ReadonlySet<string>
  /** Where a name resolves into a system schema by its prefix: name prefix → schema. */
  readonly prefixes: ReadonlyArray<readonly [string, string]>
  /**
   * Whether a prefix counts only for an unqualified name, whatever schema qualifies it (SQLite's
   * `main.sqlite_master`), or only the prefix's own schema besides (DuckDB, whose sessions search
   * the system catalog first: `main.duckdb_settings` is the system's, `main.pg_class` the file's own).
   */
  readonly prefixScope: "unqualified" | "any" | "own schema"
  /**
   * Readable `schema.relation`s that describe every database of the server, by the column naming
   * the database each row is about: read only for the connection's own (MySQL's information_schema).
   */
  readonly ownRowsBy?: ReadonlyMap<string, string>
}

const names = (text: string) => text.trim().split(/\s+/)
const qualified = (schema: string, relations: string) => names(relations).map((r) => `${schema}.${r}`)

const PG_INFORMATION_SCHEMA = qualified(
  "information_schema",
  `tables columns views schemata table_constraints key_column_usage referential_constraints constraint_column_usage
   constraint_table_usage check_constraints routines parameters sequences triggers domains domain_constraints
   element_types attributes column_udt_usage view_table_usage view_column_usage view_routine_usage table_privileges
   column_privileges routine_privileges usage_privileges role_table_grants role_column_grants enabled_roles
   applicable_roles character_sets collations collation_character_set_applicability information_schema_catalog_name
   udt_privileges data_type_privileges`
)

const PG_CATALOG = qualified(
  "pg_catalog",
  `pg_class pg_namespace pg_attribute pg_attrdef pg_type pg_index pg_constraint pg_description pg_tables pg_views
   pg_matviews pg_indexes pg_proc pg_database pg_am pg_inherits pg_partitioned_table pg_enum pg_depend pg_roles
   pg_trigger pg_rewrite pg_collation pg_extension pg_range pg_opclass pg_operator pg_cast pg_language pg_policy
   pg_policies pg_timezone_names pg_timezone_abbrevs pg_available_extensions pg_foreign_table pg_sequence`
)

const postgres: SystemRelations = {
  schemas: new Set(["pg_catalog", "information_schema", "pg_toast"]),
  catalogs: new Set(),
  readable: new Set([...PG_CATALOG, ...PG_INFORMATION_SCHEMA]),
  // PostgreSQL searches pg_catalog before the search path, and every catalog relation is named pg_*.
  prefixes: [["pg_", "pg_catalog"]],
  prefixScope: "unqualified"
}

const MYSQL_INFORMATION_SCHEMA = qualified(
  "information_schema",
  `tables columns schemata views statistics key_column_usage referential_constraints table_constraints
   check_constraints routines parameters triggers partitions character_sets collations engines events`
)

const mysql: SystemRelations = {
  schemas: new Set(["information_schema", "mysql", "performance_schema", "sys"]),
  catalogs: new Set(),
  readable: new Set(MYSQL_INFORMATION_SCHEMA),
  prefixes: [],
  prefixScope: "unqualified",
  // character_sets, collations and engines describe the server, not a database.
  ownRowsBy: new Map(
    Object.entries({
      tables: "table_schema",
      columns: "table_schema",
      schemata: "schema_name",
      views: "table_schema",
      statistics: "table_schema",
      key_column_usage: "table_schema",
      referential_constraints: "constraint_schema",
      table_constraints: "table_schema",
      check_constraints: "constraint_schema",
      routines: "routine_schema",
      parameters: "specific_schema",
      triggers: "trigger_schema",
      partitions: "table_schema",
      events: "event_schema"
    }).map(([relation, column]) => [`information_schema.${relation}`, column])
  )
}

const DUCKDB_INFORMATION_SCHEMA = qualified("information_schema", "tables columns schemata views table_constraints key_column_usage referential_constraints character_sets check_constraints constraint_column_usage")

const duckdb: SystemRelations = {
  schemas: new Set(["information_schema", "pg_catalog", "system"]),
  catalogs: new Set(["system", "temp"]),
  readable: new Set([
    ...DUCKDB_INFORMATION_SCHEMA,
    ...qualified("pg_catalog", "pg_class pg_namespace pg_attribute pg_type pg_index pg_constraint pg_tables pg_views pg_description pg_proc pg_database"),
    ...qualified("main", "duckdb_tables duckdb_columns duckdb_views duckdb_schemas duckdb_constraints duckdb_indexes duckdb_types duckdb_functions duckdb_keywords sqlite_master sqlite_schema")
  ]),
  // Sluice's DuckDB sessions search system.pg_catalog and system.main before the file's own schema.
  prefixes: [
    ["pg_", "pg_catalog"],
    ["duckdb_", "main"],
    ["sqlite_", "main"],
    ["pragma_", "main"]
  ],
  prefixScope: "own schema"
}

const sqlite: SystemRelations = {
  schemas: new Set(["sqlite_system"]),
  catalogs: new Set(),
  // sqlite_stat4 keeps sampled rows of every index.
  readable: new Set(qualified("sqlite_system", "sqlite_master sqlite_schema sqlite_temp_master sqlite_temp_schema sqlite_sequence")),
  // pragma_* are eponymous virtual tables: a pragma read as a table; dbstat shows every table's pages, cells and payload.
  prefixes: [["sqlite_", "sqlite_system"], ["pragma_", "sqlite_system"], ["dbstat", "sqlite_system"]],
  prefixScope: "any"
}

const informationSchemaOnly = (extraSchemas: ReadonlyArray<string>, catalogs: ReadonlyArray<string>, readable: ReadonlyArray<string>): SystemRelations => ({
  schemas: new Set(["information_schema", ...extraSchemas]),
  catalogs: new Set(catalogs),
  readable: new Set([
    ...qualified("information_schema", "tables columns schemata views table_constraints key_column_usage referential_constraints table_options column_field_paths"),
    ...readable
  ]),
  prefixes: [],
  prefixScope: "unqualified"
})

export const SYSTEM_RELATIONS = {
  postgresql: postgres,
  redshift: {
    ...postgres,
    readable: new Set([...postgres.readable, ...qualified("pg_catalog", "svv_table_info svv_redshift_columns svv_columns svv_tables pg_table_def")]),
    prefixes: [["pg_", "pg_catalog"], ["svv_", "pg_catalog"], ["stl_", "pg_catalog"], ["stv_", "pg_catalog"], ["svl_", "pg_catalog"], ["sys_", "pg_catalog"]]
  },
  mysql,
  duckdb,
  sqlite,
  mssql: {
    ...informationSchemaOnly(
      ["sys"],
      ["master", "msdb", "tempdb", "model"],
      qualified("sys", "tables columns schemas objects views indexes index_columns foreign_keys foreign_key_columns types key_constraints extended_properties")
    ),
    // The compatibility views (sysprocesses, syslogins…) resolve without a schema.
    prefixes: [["sys", "sys"]]
  },
  snowflake: informationSchemaOnly([], ["snowflake"], []),
  bigquery: informationSchemaOnly([], [], []),
  clickhouse: informationSchemaOnly(["system"], [], qualified("system", "tables columns databases functions data_type_families")),
  databricks: informationSchemaOnly([], ["system"], []),
  trino: informationSchemaOnly([], ["system"], [])
} satisfies Record<string, SystemRelations>

/** The system schema a lower-cased name resolves into by its prefix, if it does. */
const prefixSchema = (rules: SystemRelations, lower: ReadonlyArray<string>): string | undefined => {
  const relation = lower.at(-1) ?? ""
  const schema = rules.prefixes.find(([prefix]) => relation.startsWith(prefix))?.[1]
  if (schema === undefined || lower.length === 1 || rules.prefixScope === "any") return schema
  return rules.prefixScope === "own schema" && lower.at(-2) === schema ? schema : undefined
}

/** Why a relation named by these parts is refused, or undefined when it is not the engine's own or is metadata. */
export const systemRelationRefusal = (rules: SystemRelations, parts: ReadonlyArray<string>): string | undefined => {
  const lower = parts.map((p) => p.toLowerCase())
  const relation = lower.at(-1) ?? ""
  if (lower.length >= 3 && rules.catalogs.has(lower.at(-3)!)) return `${parts.join(".")} is the engine's own catalog`
  // BigQuery writes `region-us.INFORMATION_SCHEMA.JOBS`: any part naming a system schema counts.
  const schemaAt = lower.slice(0, -1).findLastIndex((p) => rules.schemas.has(p))
  const schema = schemaAt >= 0 ? lower[schemaAt]! : prefixSchema(rules, lower)
  if (schema === undefined) return undefined
  if (rules.readable.has(`${schema}.${relation}`)) return undefined
  return `${parts.join(".")} is a system relation that can hold data, secrets or other sessions' SQL; only reviewed metadata relations of ${schema} are readable`
}

/** Whether a relation named by these parts is one of the engine's own (readable or not), rather than the customer's. */
export const isSystemRelation = (rules: SystemRelations, parts: ReadonlyArray<string>): boolean => {
  const lower = parts.map((p) => p.toLowerCase())
  if (lower.length >= 3 && rules.catalogs.has(lower.at(-3)!)) return true
  if (lower.slice(0, -1).some((p) => rules.schemas.has(p))) return true
  return prefixSchema(rules, lower) !== undefined
}

/** The column naming the database a row of this system relation is about, where it describes every database of the server. */
export const ownRowsColumn = (rules: SystemRelations, parts: ReadonlyArray<string>): string | undefined =>
  parts.length === 2 ? rules.ownRowsBy?.get(parts.map((p) => p.toLowerCase()).join(".")) : undefined
