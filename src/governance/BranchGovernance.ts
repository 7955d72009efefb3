import type { ConnectionInput } from "../domain/Connection"
import type { PiiAction, PiiRule } from "../domain/Pii"
import { quoteIdentifier } from "./Catalog"
import { type HashPads, maskExpression } from "./MaskExpressions"
import { qualify } from "./sqlguard/Names"
import { sameTable, tableVisible } from "./TablePolicy"

/** A relation of a branch's copy, as its catalog lists it. */
export interface CopiedRelation {
  readonly schema: string
  readonly name: string
  /** pg_class.relkind: r table, p partitioned table, v view, m materialized view, f foreign table. */
  readonly kind: string
  /** The partitioned table it is a partition of, if any (its rules are its own). */
  readonly root: { readonly schema: string; readonly name: string } | null
  readonly columns: ReadonlyArray<{ readonly name: string; readonly type: string }>
  /** It has rewrite rules of its own (an UPDATE on it may do something else). */
  readonly ruled: boolean
}

const KIND_NAMES: Record<string, string> = { r: "table", p: "table", v: "view", m: "materialized view", f: "foreign table" }
const quoted = (relation: { readonly schema: string; readonly name: string }) => `${quoteIdentifier("postgresql", relation.schema)}.${quoteIdentifier("postgresql", relation.name)}`

/** What makes a copy governed: relations to drop, tables whose columns to mask (with the statements that do it), materialized views to refresh. */
export interface GovernancePlan {
  readonly drop: ReadonlyArray<{ readonly relation: CopiedRelation; readonly sql: string }>
  /**
   * Each table with ruled columns: `rewrite` (a table rewrite, which fires no trigger or rule and
   * ignores row security), else `update` (with the table's triggers off and its row security not
   * forced on its owner), each followed by `check` (a count of values not masked, which must be 0);
   * where neither holds, `fallback` drops the table.
   */
  readonly mask: ReadonlyArray<{
    readonly relation: CopiedRelation
    readonly columns: ReadonlyArray<{ readonly name: string; readonly action: PiiAction }>
    readonly rewrite: ReadonlyArray<string>
    readonly update: ReadonlyArray<string> | null
    readonly check: string
    readonly fallback: ReadonlyArray<string>
  }>
  readonly refresh: ReadonlyArray<{ readonly relation: CopiedRelation; readonly sql: string }>
  /** Statistics computed again from what is left: the copy's came from the template's raw values. */
  readonly analyze: string
}

export const dropStatement = (relation: CopiedRelation) => `drop ${KIND_NAMES[relation.kind] ?? "table"} if exists ${quoted(relation)} cascade`

/**
 * How a copy of a connection's database becomes one its branch may hand out as it is: every
 * relation the connection blocks (or leaves off its allow-list) is dropped, every column a PII rule
 * names holds its masked value in every row (a masked or hashed column becomes text, as governed
 * results show it; a table whose masking cannot be made to hold is dropped), materialized views are refreshed from what is left, and statistics computed again.
 * Foreign tables a rule names are dropped: their rows are elsewhere.
 */
export const branchGovernance = (relations: ReadonlyArray<CopiedRelation>, connection: ConnectionInput, rules: ReadonlyArray<PiiRule>, pads: HashPads): GovernancePlan => {
  const visible = tableVisible(connection)
  const named = rules.map((rule) => ({ table: qualify(rule.table.split("."), connection), column: rule.column.toLowerCase(), action: rule.action }))
  const rulesOf = (relation: { readonly schema: string; readonly name: string }) => named.filter((rule) => sameTable(rule.table, qualify([relation.schema, relation.name], connection)))
  const dropped = relations.filter((relation) => !visible(relation.schema, relation.name))
  const kept = relations.filter((relation) => visible(relation.schema, relation.name))
  const drop = [...dropped]
  const mask: Array<GovernancePlan["mask"][number]> = []
  for (const relation of kept) {
    if (relation.kind !== "r" && relation.kind !== "f") continue
    const applying = [...rulesOf(relation), ...(relation.root === null ? [] : rulesOf(relation.root))]
    const columns = relation.columns.flatMap((column) => {
      const rule = applying.find((r) => r.column === column.name.toLowerCase())
      return rule === undefined ? [] : [{ ...column, action: rule.action }]
    })
    if (columns.length === 0) continue
    if (relation.kind === "f") {
      drop.push(relation)
      continue
    }
    const table = quoted(relation)
    const column = (name: string) => quoteIdentifier("postgresql", name)
    // A masked or hashed value is text, as governed results show it (a hash's 64 digits fit no varchar(20)); other actions keep the column's type.
    const typeAfter = (c: { readonly type: string; readonly action: PiiAction }) => (c.action === "mask" || c.action === "hash" ? "text" : c.type)
    const retyped = columns.filter((c) => typeAfter(c) !== c.type)
    const sameType = columns.filter((c) => typeAfter(c) === c.type)
    const notNull = `alter table ${table} ${columns.map((c) => `alter column ${column(c.name)} drop not null`).join(", ")}`
    const rewrite = [notNull, `alter table ${table} ${columns.map((c) => `alter column ${column(c.name)} type ${typeAfter(c)} using ${maskExpression("postgresql", c, pads)}`).join(", ")}`]
    const update = relation.ruled
      ? null
      : [
          notNull,
          `alter table ${table} disable trigger user`,
          `alter table ${table} no force row level security`,
          ...(retyped.length === 0 ? [] : [`alter table ${table} ${retyped.map((c) => `alter column ${column(c.name)} type text using ${maskExpression("postgresql", c, pads)}`).join(", ")}`]),
          ...(sameType.length === 0 ? [] : [`update ${table} set ${sameType.map((c) => `${column(c.name)} = ${maskExpression("postgresql", c, pads)}`).join(", ")}`]),
          `alter table ${table} enable trigger user`
        ]
    // Masking twice gives the same value (a hash is 64 hex digits): anything else is a value the masking missed.
    const unmasked = columns
      .map((c) => (c.action === "hash" ? `(${column(c.name)} is not null and ${column(c.name)}::text !~ '^[0-9a-f]{64}$')` : `${column(c.name)} is distinct from ${maskExpression("postgresql", { ...c, type: typeAfter(c) }, pads)}`))
      .join(" or ")
    mask.push({
      relation,
      columns: columns.map((c) => ({ name: c.name, action: c.action })),
      rewrite,
      update,
      check: `select count(*)::int as unmasked from ${table} where ${unmasked}`,
      fallback: [dropStatement(relation)]
    })
  }
  const gone = new Set(drop.map((relation) => `${relation.schema}.${relation.name}`))
  const refresh = kept
    .filter((relation) => relation.kind === "m" && !gone.has(`${relation.schema}.${relation.name}`))
    .map((relation) => ({ relation, sql: `refresh materialized view ${quoted(relation)}` }))
  return { drop: drop.map((relation) => ({ relation, sql: dropStatement(relation) })), mask, refresh, analyze: "analyze" }
}

/** The catalog query a branch's own role runs in its copy for `branchGovernance`'s relations (one row per column). */
export const COPIED_RELATIONS = `
select n.nspname as schema, c.relname as name, c.relkind::text as kind,
  rn.nspname as root_schema, r.relname as root_name,
  exists (select 1 from pg_catalog.pg_rewrite w where w.ev_class operator(pg_catalog.=) c.oid and w.rulename operator(pg_catalog.<>) '_RETURN') as ruled,
  a.attname as column_name, pg_catalog.format_type(a.atttypid, a.atttypmod) as column_type
from pg_catalog.pg_class c
join pg_catalog.pg_namespace n on n.oid = c.relnamespace
left join pg_catalog.pg_class r on c.relispartition and r.oid = pg_catalog.pg_partition_root(c.oid)
left join pg_catalog.pg_namespace rn on rn.oid = r.relnamespace
left join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
where c.relkind in ('r', 'p', 'v', 'm', 'f')
  and n.nspname operator(pg_catalog.!~) '^pg_' and n.nspname operator(pg_catalog.<>) 'information_schema'
order by 1, 2, a.attnum`

/** `COPIED_RELATIONS`' rows as relations. */
export const copiedRelations = (
  rows: ReadonlyArray<{ schema: string; name: string; kind: string; root_schema: string | null; root_name: string | null; ruled: boolean; column_name: string | null; column_type: string | null }>
): ReadonlyArray<CopiedRelation> => {
  const byName = new Map<string, { schema: string; name: string; kind: string; root: CopiedRelation["root"]; ruled: boolean; columns: Array<{ name: string; type: string }> }>()
  for (const row of rows) {
    const key = `${row.schema}\u0000${row.name}`
    let relation = byName.get(key)
    if (relation === undefined) {
      relation = { schema: row.schema, name: row.name, kind: row.kind, root: row.root_name === null ? null : { schema: row.root_schema ?? "", name: row.root_name }, ruled: row.ruled, columns: [] }
      byName.set(key, relation)
    }
    if (row.column_name !== null) relation.columns.push({ name: row.column_name, type: row.column_type ?? "" })
  }
  return [...byName.values()]
}
