import type { SchemaDiff, TableChange, TableInfo } from "../domain/SchemaSnapshot"
import { qualifiedName } from "../domain/SchemaSnapshot"

const byName = (tables: ReadonlyArray<TableInfo>) => new Map(tables.map((t) => [qualifiedName(t), t]))
/** A table's keys as one string; arrays only, since a snapshot read back from jsonb has its object keys reordered. */
export const keysOf = (t: TableInfo) =>
  JSON.stringify([
    t.primary_key,
    t.foreign_keys.map((fk) => [fk.columns, fk.references.schema, fk.references.table, fk.references.columns]),
    t.unique_keys
  ])

const tableChange = (before: TableInfo, after: TableInfo): TableChange | undefined => {
  const old = new Map(before.columns.map((c) => [c.name, c]))
  const now = new Map(after.columns.map((c) => [c.name, c]))
  const change: TableChange = {
    table: qualifiedName(after),
    added_columns: after.columns.filter((c) => !old.has(c.name)).map((c) => ({ name: c.name, type: c.type })),
    removed_columns: before.columns.filter((c) => !now.has(c.name)).map((c) => c.name),
    retyped_columns: after.columns.flatMap((c) => {
      const was = old.get(c.name)
      return was !== undefined && was.type !== c.type ? [{ column: c.name, from: was.type, to: c.type }] : []
    }),
    nullability_changed: after.columns.flatMap((c) => {
      const was = old.get(c.name)
      return was !== undefined && was.nullable !== c.nullable ? [{ column: c.name, nullable: c.nullable }] : []
    }),
    keys_changed: keysOf(before) !== keysOf(after)
  }
  const changed =
    change.added_columns.length + change.removed_columns.length + change.retyped_columns.length + change.nullability_changed.length > 0 ||
    change.keys_changed
  return changed ? change : undefined
}

/** What changed from one set of tables to another: tables added and removed, columns added, removed, retyped or made (non-)nullable, keys. */
export const diffSchemas = (before: ReadonlyArray<TableInfo>, after: ReadonlyArray<TableInfo>): SchemaDiff => {
  const old = byName(before)
  const now = byName(after)
  return {
    added_tables: [...now.keys()].filter((name) => !old.has(name)).sort(),
    removed_tables: [...old.keys()].filter((name) => !now.has(name)).sort(),
    changed_tables: [...now.entries()].flatMap(([name, table]) => {
      const was = old.get(name)
      const change = was === undefined ? undefined : tableChange(was, table)
      return change === undefined ? [] : [change]
    })
  }
}

export const isEmptyDiff = (diff: SchemaDiff) =>
  diff.added_tables.length === 0 && diff.removed_tables.length === 0 && diff.changed_tables.length === 0

/** The part of a diff about tables `visible` lets through (names as `schema.table`). */
export const visiblePart = (diff: SchemaDiff, visible: (qualified: string) => boolean): SchemaDiff => ({
  added_tables: diff.added_tables.filter(visible),
  removed_tables: diff.removed_tables.filter(visible),
  changed_tables: diff.changed_tables.filter((c) => visible(c.table))
})
