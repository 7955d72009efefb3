import type { TableInfo } from "../domain/SchemaSnapshot"
import type { NoteRow } from "../repos/SchemaNotesRepo"
import type { Notes } from "./SchemaSearch"

/** A note's key: its table, and its column ('' for the table itself). */
export const noteKey = (schema: string, table: string, column: string) => `${schema}\u0000${table}\u0000${column}`

export const notesByTarget = (notes: ReadonlyArray<NoteRow>) => new Map(notes.map((n) => [noteKey(n.schema_name, n.table_name, n.column_name), n]))

/** The scanned tables with what people wrote over them: descriptions as comments, corrected types. */
export const withNotes = (tables: ReadonlyArray<TableInfo>, notes: ReadonlyArray<NoteRow>): ReadonlyArray<TableInfo> => {
  if (notes.length === 0) return tables
  const byTarget = notesByTarget(notes)
  return tables.map((t) => {
    const own = byTarget.get(noteKey(t.schema, t.name, ""))
    const columns = t.columns.map((c) => {
      const note = byTarget.get(noteKey(t.schema, t.name, c.name))
      return note === undefined ? c : { ...c, comment: note.description ?? c.comment, type: note.type_override ?? c.type }
    })
    return { ...t, comment: own?.description ?? t.comment, columns }
  })
}

/** What search reads besides names and comments: endorsement notes, and the words trusted/deprecated. */
export const searchNotes = (notes: ReadonlyArray<NoteRow>): Notes => {
  const byTarget = notesByTarget(notes)
  return (table, column) => {
    const note = byTarget.get(noteKey(table.schema, table.name, column ?? ""))
    return note === undefined ? "" : [note.endorsement ?? "", note.endorsement_note ?? ""].join(" ")
  }
}
