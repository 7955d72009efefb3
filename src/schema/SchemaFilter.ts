import { Effect } from "effect"
import { NotFound } from "../domain/Errors"
import { qualifiedName, type TableInfo, type TableKind } from "../domain/SchemaSnapshot"
import { globRegex } from "../domain/Glob"

export interface TableFilter {
  readonly schema?: string | undefined
  readonly table?: string | undefined
  readonly column?: string | undefined
  readonly type?: string | undefined
  readonly kind?: TableKind | undefined
  readonly has_foreign_keys?: boolean | undefined
  readonly min_rows?: number | undefined
}

/** A pattern with `*` is a glob; without, a substring; both case-insensitive. */
const matcher = (pattern: string | undefined) => {
  if (pattern === undefined || pattern === "") return undefined
  const regex = globRegex(pattern.includes("*") ? pattern : `*${pattern}*`)
  return (value: string) => regex.test(value)
}

/** The tables every given filter lets through; `column` and `type` need one column matching both. */
export const filterTables = (tables: ReadonlyArray<TableInfo>, filter: TableFilter) => {
  const schema = matcher(filter.schema)
  const table = matcher(filter.table)
  const column = matcher(filter.column)
  const type = matcher(filter.type)
  return tables.filter(
    (t) =>
      (schema === undefined || schema(t.schema)) &&
      (table === undefined || table(t.name)) &&
      (filter.kind === undefined || t.kind === filter.kind) &&
      (filter.has_foreign_keys === undefined || t.foreign_keys.length > 0 === filter.has_foreign_keys) &&
      (filter.min_rows === undefined || (t.row_estimate ?? 0) >= filter.min_rows) &&
      (column === undefined && type === undefined
        ? true
        : t.columns.some((c) => (column === undefined || column(c.name)) && (type === undefined || type(c.type))))
  )
}

/** Tables a name could mean: an exact `schema.table` match (any case, quotes ignored), else every schema's table of that name. */
export const tablesNamed = (tables: ReadonlyArray<TableInfo>, name: string) => {
  const wanted = name.toLowerCase().replaceAll('"', "")
  const exact = tables.filter((t) => qualifiedName(t).toLowerCase() === wanted)
  return exact.length > 0 ? exact : tables.filter((t) => t.name.toLowerCase() === wanted.split(".").at(-1))
}

/** The table a name means (the first, when several schemas have one of that name), or a 404 naming the connection. */
export const findTable = (tables: ReadonlyArray<TableInfo>, name: string, connection: string) => {
  const table = tablesNamed(tables, name)[0]
  return table === undefined ? Effect.fail(new NotFound({ message: `No table "${name}" on ${connection}` })) : Effect.succeed(table)
}

/** A table's column by name, any case, or a 404 listing the columns there are. */
export const findColumn = (table: TableInfo, name: string) => {
  const column = table.columns.find((c) => c.name.toLowerCase() === name.toLowerCase())
  return column === undefined
    ? Effect.fail(new NotFound({ message: `No column "${name}" in ${qualifiedName(table)}; its columns are ${table.columns.map((c) => c.name).join(", ")}` }))
    : Effect.succeed(column)
}
