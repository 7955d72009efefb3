import type { CatalogQueries } from "./CatalogQueries"
import { informationSchemaCatalog } from "./InformationSchema"

/**
 * A BigQuery dataset's INFORMATION_SCHEMA: column descriptions from COLUMN_FIELD_PATHS, keys (no
 * REFERENTIAL_CONSTRAINTS there: a foreign key's target is its referenced table's primary key),
 * partitioning and clustering columns, and rows and bytes from the dataset's __TABLES__.
 */
export const bigqueryCatalog = (project: string, dataset: string): CatalogQueries => {
  const d = `\`${project}.${dataset}\``
  const is = `${d}.INFORMATION_SCHEMA`
  return {
    relations: informationSchemaCatalog({ prefix: `${d}.` }).relations,
    columns: `select c.table_schema, c.table_name, c.column_name, c.data_type, c.is_nullable, nullif(c.column_default, 'NULL'),
        f.description, null, null, null
      from ${is}.COLUMNS c
      left join ${is}.COLUMN_FIELD_PATHS f on f.table_name = c.table_name and f.column_name = c.column_name and f.field_path = c.column_name
      order by c.table_schema, c.table_name, c.ordinal_position`,
    keyColumns: `select kcu.table_schema, kcu.table_name, kcu.constraint_name,
        case tc.constraint_type when 'PRIMARY KEY' then 'p' else 'f' end,
        kcu.column_name, rk.table_schema, rk.table_name, rk.column_name
      from ${is}.TABLE_CONSTRAINTS tc
      join ${is}.KEY_COLUMN_USAGE kcu on kcu.constraint_name = tc.constraint_name and kcu.table_name = tc.table_name
      left join (select distinct constraint_name, table_name from ${is}.CONSTRAINT_COLUMN_USAGE) ref
        on tc.constraint_type = 'FOREIGN KEY' and ref.constraint_name = tc.constraint_name
      left join ${is}.TABLE_CONSTRAINTS rpk on rpk.table_name = ref.table_name and rpk.constraint_type = 'PRIMARY KEY'
      left join ${is}.KEY_COLUMN_USAGE rk
        on rk.constraint_name = rpk.constraint_name and rk.table_name = rpk.table_name and rk.ordinal_position = kcu.position_in_unique_constraint
      where tc.constraint_type in ('PRIMARY KEY', 'FOREIGN KEY')
      order by kcu.table_schema, kcu.table_name, kcu.constraint_name, kcu.ordinal_position`,
    facts: [
      `select table_schema, table_name, 'partition_key', column_name, 0 from ${is}.COLUMNS where is_partitioning_column = 'YES'
        union all select table_schema, table_name, 'cluster_key', column_name, clustering_ordinal_position from ${is}.COLUMNS
          where clustering_ordinal_position is not null
        order by 1, 2, 3, 5`,
      `select dataset_id, table_id, 'row_estimate', cast(row_count as string) from ${d}.__TABLES__
        union all select dataset_id, table_id, 'size_bytes', cast(size_bytes as string) from ${d}.__TABLES__`,
      `select table_schema, table_name, 'comment', json_value(option_value) from ${is}.TABLE_OPTIONS where option_name = 'description'`
    ]
  }
}
