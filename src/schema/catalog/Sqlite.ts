import { type CatalogQueries, literal } from "./CatalogQueries"

const objects = `sqlite_master m where m.type in ('table', 'view') and m.name not like 'sqlite_%'`

/** SQLite through its table-valued pragmas; one schema, `main`. */
export const sqliteCatalog: CatalogQueries = {
  relations: `select 'main', m.name, m.type, null, null, null, case m.type when 'view' then m.sql end, null, null, null, null
    from ${objects} order by m.name`,
  columns: `select 'main', m.name, p.name, p.type, p."notnull" = 0, p.dflt_value, null, p.pk > 0, null, null
    from ${objects.replace(" where ", " join pragma_table_info(m.name) p where ")} order by m.name, p.cid`,
  keys: `select 'main', name, null, 'f', json_group_array("from"), 'main', "table", json_group_array("to")
    from (select m.name, f.id, f."from", f."table", f."to" from ${objects.replace(" where ", " join pragma_foreign_key_list(m.name) f where ")}
      order by m.name, f.id, f.seq)
    group by name, id, "table" order by name, id`,
  indexes: `select 'main', m.name, il.name, il."unique",
      (select json_group_array(ii.name) from (select name from pragma_index_info(il.name) order by seqno) ii), null
    from ${objects.replace(" where ", " join pragma_index_list(m.name) il where ")} and il.origin <> 'pk' order by m.name, il.name`,
  relationsNow: (relations) => `select 'main', m.name, m.type, case m.type when 'view' then m.sql end
    from ${objects} and m.name in (${relations.filter((r) => r.schema === "main").map((r) => literal(r.name)).join(", ")})`
}
