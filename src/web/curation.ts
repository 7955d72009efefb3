import type { EnrichedSchema } from "../domain/SchemaCuration"

export type CuratedTable = (typeof EnrichedSchema.Type)["tables"][number]

const SOURCES = { manual: "written by hand", generated: "generated", comment: "the database's comment" } as const

/** Where a description came from, for the muted note beside it. */
export const sourceLabel = (source: CuratedTable["description_source"]) => (source === null ? null : SOURCES[source])

/** The descriptions that differ from what is shown, as the refine call takes them (an emptied field clears). */
export const changedDescriptions = (table: CuratedTable, description: string, columns: Readonly<Record<string, string>>) => {
  const asStored = (text: string) => (text.trim() === "" ? null : text.trim())
  const changedColumns = table.columns
    .filter((c) => c.name in columns && asStored(columns[c.name]!) !== c.comment)
    .map((c) => ({ name: c.name, description: asStored(columns[c.name]!) }))
  return {
    ...(asStored(description) !== table.comment ? { description: asStored(description) } : {}),
    ...(changedColumns.length > 0 ? { columns: changedColumns } : {})
  }
}
