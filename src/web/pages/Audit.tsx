import { TableHead } from "../components/TableHead"
import { KeySelect } from "../components/KeySelect"
import { useEffect, useRef, useState } from "react"
import type { AuditEntry } from "../../domain/Audit"
import { ErrorBanner, Empty, Loading } from "../components/States"
import { useAction, useApi } from "../client/useApi"
import { formatTime } from "../format"
import { useDebounced } from "../useDebounced"

type Entry = typeof AuditEntry.Type
interface Filters {
  readonly event_type: string
  readonly connection: string
  readonly outcome: "" | "success" | "refused" | "error"
  readonly key_id: string
  readonly from: string
  readonly to: string
  readonly hideReads: boolean
}
// The log opens without page loads (this console's own among them), so what changed and what was queried comes first.
const DEFAULT_FILTERS: Filters = { event_type: "", connection: "", outcome: "", key_id: "", from: "", to: "", hideReads: true }

const paramsOf = (filters: Filters) => ({
  ...(filters.event_type !== "" ? { event_type: filters.event_type } : {}),
  ...(filters.connection !== "" ? { connection: filters.connection } : {}),
  ...(filters.outcome !== "" ? { outcome: filters.outcome } : {}),
  ...(filters.key_id !== "" ? { key_id: filters.key_id } : {}),
  ...(filters.from !== "" ? { from: Math.floor(new Date(filters.from).getTime() / 1000) } : {}),
  ...(filters.to !== "" ? { to: Math.floor(new Date(filters.to).getTime() / 1000) } : {}),
  ...(filters.hideReads ? { exclude_reads: true } : {})
})

export const AuditPage = () => {
  const [typed, setFilters] = useState<Filters>(DEFAULT_FILTERS)
  const filters = useDebounced(typed, 250)
  const [keys] = useApi((client) => client.keys.list({ urlParams: { limit: 200 } }))
  const [entries, setEntries] = useState<ReadonlyArray<Entry>>([])
  const [cursor, setCursor] = useState<string | null | undefined>(undefined)
  const [open, setOpen] = useState<string | null>(null)
  const load = useAction()
  const exporting = useAction()
  const sentinel = useRef<HTMLDivElement>(null)

  const fetchPage = async (from: string | undefined, replace: boolean) => {
    const page = await load.perform((client) => client.audit.list({ urlParams: { ...paramsOf(filters), limit: 50, ...(from !== undefined ? { cursor: from } : {}) } }))
    if (page === undefined) return
    setEntries((current) => (replace ? page.items : [...current, ...page.items]))
    setCursor(page.next_cursor)
  }
  useEffect(() => void fetchPage(undefined, true), [filters])
  useEffect(() => {
    const target = sentinel.current
    if (target === null || typeof cursor !== "string") return
    const observer = new IntersectionObserver((seen) => seen.some((s) => s.isIntersecting) && !load.pending && fetchPage(cursor, false))
    observer.observe(target)
    return () => observer.disconnect()
  })

  const download = async (format: "csv" | "json") => {
    const text = await exporting.perform((client) => client.audit.export({ urlParams: { ...paramsOf(filters), format } }))
    if (text === undefined) return
    const link = document.createElement("a")
    link.href = URL.createObjectURL(new Blob([text], { type: format === "csv" ? "text/csv" : "application/json" }))
    link.download = `sluice-audit.${format}`
    link.click()
    setTimeout(() => URL.revokeObjectURL(link.href), 1000)
  }

  return (
    <section aria-labelledby="audit-title">
      <div className="heading">
        <h1 id="audit-title">Audit log</h1>
        <span>
          <button type="button" onClick={() => download("csv")} disabled={exporting.pending}>
            Export CSV
          </button>{" "}
          <button type="button" onClick={() => download("json")} disabled={exporting.pending}>
            Export JSON
          </button>
        </span>
      </div>
      <ErrorBanner error={exporting.error} />
      <form className="row filters" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <label>
          Event
          <input value={typed.event_type} onChange={(e) => setFilters({ ...typed, event_type: e.target.value })} placeholder="query" />
        </label>
        <label>
          Connection
          <input value={typed.connection} onChange={(e) => setFilters({ ...typed, connection: e.target.value })} />
        </label>
        <label>
          Outcome
          <select value={typed.outcome} onChange={(e) => setFilters({ ...typed, outcome: e.target.value as Filters["outcome"] })}>
            <option value="">any</option>
            <option value="success">success</option>
            <option value="refused">refused</option>
            <option value="error">error</option>
          </select>
        </label>
        <label className="check">
          <input type="checkbox" checked={typed.hideReads} onChange={(e) => setFilters({ ...typed, hideReads: e.target.checked })} /> Hide page loads (GET)
        </label>
        {keys.state === "ready" && <KeySelect keys={keys.value.items} value={typed.key_id} onChange={(key_id) => setFilters({ ...typed, key_id })} none="any" />}
        <label>
          From
          <input type="datetime-local" value={typed.from} onChange={(e) => setFilters({ ...typed, from: e.target.value })} />
        </label>
        <label>
          To
          <input type="datetime-local" value={typed.to} onChange={(e) => setFilters({ ...typed, to: e.target.value })} />
        </label>
      </form>
      <ErrorBanner error={load.error} onRetry={() => fetchPage(undefined, true)} />
      {entries.length === 0 && load.pending && <Loading what="the audit log" />}
      {entries.length === 0 && !load.pending && load.error === null && <Empty>Nothing recorded matches these filters.</Empty>}
      {entries.length > 0 && (
        <div className="scroll-x">
          <table className="audit">
            <TableHead columns={["Time", "Event", "Who", "Connection", "Outcome", "SQL / route"]} />
            <tbody>
              {entries.map((entry) => (
                <AuditRow key={entry.id} entry={entry} open={open === entry.id} onToggle={() => setOpen(open === entry.id ? null : entry.id)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div ref={sentinel} aria-hidden="true" />
      {entries.length > 0 && load.pending && <Loading what="more" />}
    </section>
  )
}

const AuditRow = ({ entry, open, onToggle }: { readonly entry: Entry; readonly open: boolean; readonly onToggle: () => void }) => (
  <>
    <tr className={`outcome-${entry.outcome}`}>
      <td>
        <button type="button" className="link" aria-expanded={open} onClick={onToggle}>
          {formatTime(entry.timestamp)}
        </button>
      </td>
      <td>{entry.event_type}</td>
      <td title={entry.principal ?? undefined}>{entry.key_name ?? entry.principal ?? "—"}</td>
      <td>{entry.connection ?? "—"}</td>
      <td>
        {entry.outcome}
        {entry.block_reason !== null && <span className="muted"> ({entry.block_reason})</span>}
      </td>
      <td className="sql">{entry.sql ?? `${entry.method ?? ""} ${entry.route}`}</td>
    </tr>
    {open && (
      <tr className="detail">
        <td colSpan={6}>
          <pre>{JSON.stringify(entry, null, 2)}</pre>
        </td>
      </tr>
    )}
  </>
)
