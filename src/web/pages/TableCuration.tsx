import { type FormEvent, useState } from "react"
import { ErrorBanner } from "../components/States"
import { useAction } from "../client/useApi"
import { changedDescriptions, type CuratedTable } from "../curation"

type Endorsement = "" | "trusted" | "deprecated"

/**
 * Describing and endorsing one table: its description and its columns' (stored as written by
 * hand), and whether it is trusted or deprecated. Saving needs a key with `write`.
 */
export const TableCuration = ({ name, table, qualified, onSaved }: { readonly name: string; readonly table: CuratedTable; readonly qualified: string; readonly onSaved: () => void }) => {
  const [editing, setEditing] = useState(false)
  // Filled from the table each time the form opens.
  const [description, setDescription] = useState("")
  const [columns, setColumns] = useState<Record<string, string>>({})
  const [endorsement, setEndorsement] = useState<Endorsement>("")
  const [note, setNote] = useState("")
  const save = useAction()

  const open = () => {
    setDescription(table.comment ?? "")
    setColumns(Object.fromEntries(table.columns.map((c) => [c.name, c.comment ?? ""])))
    setEndorsement(table.endorsement ?? "")
    setNote(table.endorsement_note ?? "")
    save.clearError()
    setEditing(true)
  }

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    const refined = changedDescriptions(table, description, columns)
    const endorsementChanged = endorsement !== (table.endorsement ?? "") || (endorsement !== "" && note.trim() !== (table.endorsement_note ?? ""))
    if (Object.keys(refined).length > 0) {
      const done = await save.perform((client) => client.schemaCuration.refine({ path: { name }, payload: { table: qualified, ...refined } }))
      if (done === undefined) return
    }
    if (endorsementChanged) {
      // The API replaces the connection's whole set, so this table's entry is swapped in the current set.
      const current = await save.perform((client) => client.schemaCuration.endorsements({ path: { name } }))
      if (current === undefined) return
      const others = current.endorsements
        .filter((e) => !(e.table === qualified && e.column === null))
        .map((e) => ({ table: e.table, column: e.column, status: e.status, note: e.note }))
      const mine = endorsement === "" ? [] : [{ table: qualified, status: endorsement, note: note.trim() === "" ? null : note.trim() }]
      const done = await save.perform((client) => client.schemaCuration.putEndorsements({ path: { name }, payload: { endorsements: [...others, ...mine] } }))
      if (done === undefined) return
    }
    setEditing(false)
    onSaved()
  }

  if (!editing) {
    return (
      <button type="button" onClick={open}>
        Describe and endorse
      </button>
    )
  }
  return (
    <form className="card curation" onSubmit={submit} aria-label={`Describe and endorse ${qualified}`}>
      <label>
        Table description
        <textarea value={description} onChange={(e) => setDescription(e.target.value)} rows={3} />
      </label>
      <div className="row">
        <label>
          Endorsement
          <select value={endorsement} onChange={(e) => setEndorsement(e.target.value as Endorsement)}>
            <option value="">none</option>
            <option value="trusted">trusted</option>
            <option value="deprecated">deprecated</option>
          </select>
        </label>
        <label className="grow">
          Endorsement note
          <input value={note} onChange={(e) => setNote(e.target.value)} disabled={endorsement === ""} placeholder="why, and what to use instead" />
        </label>
      </div>
      <fieldset>
        <legend>Column descriptions</legend>
        {table.columns.map((c) => (
          <label key={c.name} className="column-description">
            {c.name}
            <input value={columns[c.name] ?? ""} onChange={(e) => setColumns({ ...columns, [c.name]: e.target.value })} />
          </label>
        ))}
      </fieldset>
      <ErrorBanner error={save.error} />
      <div className="row">
        <button type="submit" className="primary" disabled={save.pending}>
          Save
        </button>
        <button type="button" onClick={() => setEditing(false)} disabled={save.pending}>
          Cancel
        </button>
      </div>
    </form>
  )
}
