import { type CatalogQueries, literal } from "./CatalogQueries"

const jsonList = (column: string, order: string) => `concat('[', group_concat(json_quote(${column}) order by ${order} separator ','), ']')`

/** MySQL 5.7+ and MariaDB 10.2+; the connection's database, or every user schema when it names none. */
export const mysqlCatalog = (database: string | undefined): CatalogQueries => {
  const where = (alias: string) =>
    database === undefined
      ? `${alias}.table_schema not in ('mysql', 'information_schema', 'performance_schema', 'sys')`
      : `${alias}.table_schema = database()`
  return {
    relations: `select t.table_schema, t.table_name, case t.table_type when 'VIEW' then 'view' else 'table' end,
        nullif(t.table_comment, ''), t.table_rows, t.data_length + t.index_length, v.view_definition,
        (select max(p.partition_expression) from information_schema.partitions p
          where p.table_schema = t.table_schema and p.table_name = t.table_name),
        t.engine, null, null
      from information_schema.tables t
      left join information_schema.views v on v.table_schema = t.table_schema and v.table_name = t.table_name
      where ${where("t")} order by 1, 2`,
    columns: `select c.table_schema, c.table_name, c.column_name, c.column_type, c.is_nullable = 'YES',
        coalesce(nullif(c.generation_expression, ''), c.column_default),
        nullif(c.column_comment, ''), null, null, null
      from information_schema.columns c where ${where("c")}
      order by c.table_schema, c.table_name, c.ordinal_position`,
    keys: `select k.table_schema, k.table_name, k.constraint_name,
        case when k.constraint_name = 'PRIMARY' then 'p' when k.referenced_table_name is not null then 'f' else 'u' end,
        ${jsonList("k.column_name", "k.ordinal_position")}, k.referenced_table_schema, k.referenced_table_name,
        case when k.referenced_table_name is not null then ${jsonList("k.referenced_column_name", "k.ordinal_position")} end
      from information_schema.key_column_usage k where ${where("k")}
      group by k.table_schema, k.table_name, k.constraint_name, k.referenced_table_schema, k.referenced_table_name
      order by 1, 2, 3`,
    indexes: `select s.table_schema, s.table_name, s.index_name, max(s.non_unique) = 0, ${jsonList("s.column_name", "s.seq_in_index")}, null
      from information_schema.statistics s where ${where("s")} and s.index_name <> 'PRIMARY'
      group by s.table_schema, s.table_name, s.index_name order by 1, 2, 3`,
    // One equality on schema and name per relation: information_schema then opens only those tables' definitions.
    relationsNow: (relations) => `select t.table_schema, t.table_name, case t.table_type when 'VIEW' then 'view' else 'table' end, v.view_definition
      from information_schema.tables t
      left join information_schema.views v on v.table_schema = t.table_schema and v.table_name = t.table_name
      where ${relations.map((r) => `(t.table_schema = ${literal(r.schema, true)} and t.table_name = ${literal(r.name, true)})`).join(" or ")}`
  }
}
