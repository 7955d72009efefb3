import type { CatalogQueries } from "./CatalogQueries"

const SYSTEM_SCHEMAS = "('information_schema', 'pg_catalog', 'pg_internal', 'sys')"

export interface InformationSchemaOptions {
  /** Qualifies every view (BigQuery's `project.dataset`.). */
  readonly prefix?: string
  /** Reads primary, unique and foreign keys from table_constraints, key_column_usage and referential_constraints. */
  readonly keys?: boolean
  /** Engine-specific columns of information_schema.tables (as t) and .columns (as c), as SQL. */
  readonly tableComment?: string
  readonly rowEstimate?: string
  readonly sizeBytes?: string
  readonly clusterKeys?: string
  readonly columnComment?: string
}

/**
 * The SQL-standard catalog views, for engines read through them: tables (with view definitions) and
 * columns, the engine's own extra columns where it has them, and keys where it keeps them there.
 */
export const informationSchemaCatalog = (options: InformationSchemaOptions = {}): CatalogQueries => {
  const p = options.prefix ?? ""
  return {
    relations: `select t.table_schema, t.table_name,
        case when t.table_type like '%MATERIALIZED%' then 'materialized_view' when t.table_type like '%VIEW%' then 'view' else 'table' end,
        ${options.tableComment ?? "null"}, ${options.rowEstimate ?? "null"}, ${options.sizeBytes ?? "null"}, v.view_definition,
        null, null, null, ${options.clusterKeys ?? "null"}
      from ${p}information_schema.tables t
      left join ${p}information_schema.views v on v.table_schema = t.table_schema and v.table_name = t.table_name
      where lower(t.table_schema) not in ${SYSTEM_SCHEMAS}
      order by t.table_schema, t.table_name`,
    columns: `select c.table_schema, c.table_name, c.column_name, c.data_type, c.is_nullable, c.column_default,
        ${options.columnComment ?? "null"}, null, null, null
      from ${p}information_schema.columns c where lower(c.table_schema) not in ${SYSTEM_SCHEMAS}
      order by c.table_schema, c.table_name, c.ordinal_position`,
    ...(options.keys === true
      ? {
          keyColumns: `select kcu.table_schema, kcu.table_name, kcu.constraint_name,
              case tc.constraint_type when 'PRIMARY KEY' then 'p' when 'FOREIGN KEY' then 'f' else 'u' end,
              kcu.column_name, rk.table_schema, rk.table_name, rk.column_name
            from ${p}information_schema.table_constraints tc
            join ${p}information_schema.key_column_usage kcu
              on kcu.constraint_schema = tc.constraint_schema and kcu.constraint_name = tc.constraint_name and kcu.table_name = tc.table_name
            left join ${p}information_schema.referential_constraints rc
              on rc.constraint_schema = tc.constraint_schema and rc.constraint_name = tc.constraint_name
            left join ${p}information_schema.key_column_usage rk
              on rk.constraint_schema = rc.unique_constraint_schema and rk.constraint_name = rc.unique_constraint_name
                and rk.ordinal_position = kcu.position_in_unique_constraint
            where tc.constraint_type in ('PRIMARY KEY', 'FOREIGN KEY', 'UNIQUE') and lower(tc.table_schema) not in ${SYSTEM_SCHEMAS}
            order by kcu.table_schema, kcu.table_name, kcu.constraint_name, kcu.ordinal_position`
        }
      : {})
  }
}

/** Trino keeps no keys (its connectors do not report constraints); table comments live in system.metadata. */
export const trinoCatalog: CatalogQueries = {
  ...informationSchemaCatalog(),
  facts: [
    `select schema_name, table_name, 'comment', comment from system.metadata.table_comments
      where catalog_name = current_catalog and comment is not null`
  ]
}

/** Databricks (Unity Catalog) keeps comments and keys in its information_schema. */
export const databricksCatalog: CatalogQueries = informationSchemaCatalog({ keys: true, tableComment: "t.comment", columnComment: "c.comment" })

/** ClickHouse's system tables: engine, sorting, partition and primary keys, rows and bytes. */
export const clickhouseCatalog: CatalogQueries = {
  relations: `SELECT database, name, if(engine LIKE '%View', 'view', 'table'), nullIf(comment, ''), total_rows, total_bytes,
      if(engine LIKE '%View', as_select, NULL), nullIf(partition_key, ''), engine,
      toJSONString(arrayFilter(x -> x != '', splitByString(', ', sorting_key))), NULL
    FROM system.tables WHERE database = currentDatabase() AND NOT is_temporary ORDER BY database, name`,
  columns: `SELECT database, table, name, type, startsWith(type, 'Nullable('), nullIf(default_expression, ''), nullIf(comment, ''),
      is_in_primary_key, NULL, NULL
    FROM system.columns WHERE database = currentDatabase() ORDER BY database, table, position`,
  // The primary key in key order (is_in_primary_key only says which columns are in it).
  keys: `SELECT database, name, 'primary_key', 'p', toJSONString(arrayFilter(x -> x != '', splitByString(', ', primary_key))), NULL, NULL, NULL
    FROM system.tables WHERE database = currentDatabase() AND primary_key != '' ORDER BY database, name`
}
