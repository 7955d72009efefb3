import { type CatalogQueries, literal } from "./CatalogQueries"

// The file the connection opened: its only catalog that is not DuckDB's own (its sessions search the system catalog first, so current_database() is not it).
const FILE = `(select database_name from duckdb_databases() where not internal)`
const own = `database_name = ${FILE} and not internal`

/** DuckDB's own catalog functions, for the database file the connection opened. */
export const duckdbCatalog: CatalogQueries = {
  relations: `select schema_name, table_name, 'table', comment, estimated_size, null, null, null, null, null, null
      from duckdb_tables() where ${own}
    union all
    select schema_name, view_name, 'view', comment, null, null, sql, null, null, null, null
      from duckdb_views() where ${own}
    order by 1, 2`,
  columns: `select schema_name, table_name, column_name, data_type, is_nullable, column_default, comment, null, null, null
    from duckdb_columns() where ${own} order by schema_name, table_name, column_index`,
  keys: `select schema_name, table_name, constraint_name,
      case constraint_type when 'PRIMARY KEY' then 'p' when 'FOREIGN KEY' then 'f' else 'u' end,
      to_json(constraint_column_names)::varchar, case when constraint_type = 'FOREIGN KEY' then schema_name end,
      referenced_table, to_json(referenced_column_names)::varchar
    from duckdb_constraints() where database_name = ${FILE}
      and constraint_type in ('PRIMARY KEY', 'FOREIGN KEY', 'UNIQUE')
    order by 1, 2, 3`,
  indexes: `select schema_name, table_name, index_name, is_unique, null, sql
    from duckdb_indexes() where database_name = ${FILE} order by 1, 2, 3`,
  relationsNow: (relations) => {
    const named = (schema: string, name: string) => `(${schema}, ${name}) in (${relations.map((r) => `(${literal(r.schema)}, ${literal(r.name)})`).join(", ")})`
    return `select schema_name, table_name, 'table', null from duckdb_tables() where ${own} and ${named("schema_name", "table_name")}
    union all
    select schema_name, view_name, 'view', sql from duckdb_views() where ${own} and ${named("schema_name", "view_name")}`
  }
}
