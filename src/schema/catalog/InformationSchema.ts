import type { CatalogQueries } from "./CatalogQueries"

const SYSTEM_SCHEMAS = "('information_schema', 'pg_catalog', 'pg_internal', 'sys')"

/**
 * The SQL-standard catalog views, for engines read through them: tables and columns, and keys
 * where the engine has table_constraints, key_column_usage and referential_constraints.
 */
export const informationSchemaCatalog = (prefix = "", options: { readonly keys: boolean } = { keys: false }): CatalogQueries => ({
  relations: `select table_schema, table_name, case when table_type like '%VIEW%' then 'view' else 'table' end,
      null, null, null, null, null, null, null, null
    from ${prefix}information_schema.tables where lower(table_schema) not in ${SYSTEM_SCHEMAS}
    order by table_schema, table_name`,
  columns: `select table_schema, table_name, column_name, data_type, is_nullable, column_default, null, null, null, null
    from ${prefix}information_schema.columns where lower(table_schema) not in ${SYSTEM_SCHEMAS}
    order by table_schema, table_name, ordinal_position`,
  ...(options.keys
    ? {
        keyColumns: `select kcu.table_schema, kcu.table_name, kcu.constraint_name,
            case tc.constraint_type when 'PRIMARY KEY' then 'p' when 'FOREIGN KEY' then 'f' else 'u' end,
            kcu.column_name, rk.table_schema, rk.table_name, rk.column_name
          from ${prefix}information_schema.table_constraints tc
          join ${prefix}information_schema.key_column_usage kcu
            on kcu.constraint_schema = tc.constraint_schema and kcu.constraint_name = tc.constraint_name and kcu.table_name = tc.table_name
          left join ${prefix}information_schema.referential_constraints rc
            on rc.constraint_schema = tc.constraint_schema and rc.constraint_name = tc.constraint_name
          left join ${prefix}information_schema.key_column_usage rk
            on rk.constraint_schema = rc.unique_constraint_schema and rk.constraint_name = rc.unique_constraint_name
              and rk.ordinal_position = kcu.position_in_unique_constraint
          where tc.constraint_type in ('PRIMARY KEY', 'FOREIGN KEY', 'UNIQUE') and lower(tc.table_schema) not in ${SYSTEM_SCHEMAS}
          order by kcu.table_schema, kcu.table_name, kcu.constraint_name, kcu.ordinal_position`
      }
    : {})
})

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
