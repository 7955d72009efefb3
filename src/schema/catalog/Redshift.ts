import type { CatalogQueries } from "./CatalogQueries"
import { informationSchemaCatalog } from "./InformationSchema"

/**
 * Redshift's information_schema with keys, plus its own system views: rows, size and distribution
 * style from svv_table_info, sort and distribution key columns from svv_redshift_columns, and
 * table comments from pg_description.
 */
export const redshiftCatalog: CatalogQueries = {
  ...informationSchemaCatalog({ keys: true }),
  facts: [
    `select "schema", "table", 'row_estimate', tbl_rows::varchar from svv_table_info
      union all select "schema", "table", 'size_bytes', (size::bigint * 1048576)::varchar from svv_table_info
      union all select "schema", "table", 'engine', 'DISTSTYLE ' || diststyle from svv_table_info where diststyle is not null`,
    `select schema_name, table_name, 'sort_key', column_name, abs(sortkey) from svv_redshift_columns
        where database_name = current_database() and sortkey <> 0
      union all select schema_name, table_name, 'cluster_key', column_name, ordinal_position from svv_redshift_columns
        where database_name = current_database() and distkey
      order by 1, 2, 3, 5`,
    `select n.nspname, c.relname, 'comment', d.description
      from pg_description d join pg_class c on c.oid = d.objoid join pg_namespace n on n.oid = c.relnamespace
      where d.objsubid = 0 and d.classoid = 'pg_class'::regclass`
  ]
}
