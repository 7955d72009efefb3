import { type ReactNode, useEffect, useMemo, useState } from "react"
import { Effect } from "effect"
import type { RefreshStatus } from "../../domain/SchemaSnapshot"
import { ConnectionPicker, useChosenConnection } from "../components/ConnectionPicker"
import { TableHead } from "../components/TableHead"
import { Link } from "../components/Link"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { useAction, useApi } from "../client/useApi"
import { formatTime } from "../format"
import { type CuratedTable, sourceLabel } from "../curation"
import { TableCuration } from "./TableCuration"
import { useDebounced } from "../useDebounced"

type Table = CuratedTable
const qualified = (t: { readonly schema: string; readonly name: string }) => `${t.schema}.${t.name}`

export const SchemaPage = () => {
  const { connections, reload, chosen, choose } = useChosenConnection()
  return (
    <section aria-labelledby="schema-title">
      <h1 id="schema-title">Schema</h1>
      <Loaded value={connections} what="connections" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>
              <Link to="/connections">Add a connection</Link> first.
            </Empty>
          ) : (
            <ConnectionSchema key={chosen} name={chosen} picker={<ConnectionPicker items={page.items} value={chosen} onChange={choose} />} />
          )
        }
      </Loaded>
    </section>
  )
}

const ConnectionSchema = ({ name, picker }: { readonly name: string; readonly picker: ReactNode }) => {
  const [schema, reloadSchema] = useApi((client) => client.schemaCuration.enriched({ path: { name } }))
  const [history, reloadHistory] = useApi((client) => client.schema.diffHistory({ path: { name }, urlParams: { limit: 20 } }))
  const [selected, setSelected] = useState<string | null>(null)
  const [search, setSearch] = useState("")
  const refreshed = () => {
    reloadSchema()
    reloadHistory()
  }
  const tables = schema.state === "ready" ? schema.value.tables : []
  const table = tables.find((t) => qualified(t) === selected)
  return (
    <>
      <div className="row">
        {picker}
        <label className="grow">
          Search tables and columns
          <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="customer email" />
        </label>
        <Refresh name={name} onDone={refreshed} />
      </div>
      <Loaded value={schema} what="the schema" onRetry={reloadSchema}>
        {(s) => (
          <div className="schema-layout">
            <div className="card schema-nav">
              <p className="muted small">
                {s.tables.length} tables · version {s.version} · scanned {formatTime(s.scanned_at)}
              </p>
              {search.trim() === "" ? <SchemaTree tables={s.tables} selected={selected} onSelect={setSelected} /> : <SearchResults name={name} q={search.trim()} onSelect={setSelected} />}
            </div>
            <div className="card schema-detail">{table === undefined ? <Empty>Choose a table to see its columns, keys and relationships.</Empty> : <TableDetail name={name} table={table} onChanged={reloadSchema} />}</div>
          </div>
        )}
      </Loaded>
      <div className="card">
        <h2>Schema changes</h2>
        <Loaded value={history} what="schema changes" onRetry={reloadHistory}>
          {({ items }) =>
            items.length === 0 ? (
              <Empty>No changes seen since the first scan.</Empty>
            ) : (
              <ul className="changes">
                {items.map((c) => (
                  <li key={c.id}>
                    <span className="muted small">{formatTime(c.detected_at)}</span> version {c.from_version ?? "–"} → {c.to_version}:{" "}
                    {[
                      ...c.diff.added_tables.map((t) => `+ ${t}`),
                      ...c.diff.removed_tables.map((t) => `− ${t}`),
                      ...c.diff.changed_tables.map(
                        (t) =>
                          `~ ${t.table} (${[
                            ...t.added_columns.map((a) => `+${a.name}`),
                            ...t.removed_columns.map((r) => `−${r}`),
                            ...t.retyped_columns.map((r) => `${r.column}: ${r.from}→${r.to}`)
                          ].join(", ")}${t.keys_changed ? "; keys" : ""})`
                      )
                    ].join("; ")}
                  </li>
                ))}
              </ul>
            )
          }
        </Loaded>
      </div>
    </>
  )
}

const POLL_MS = 400

/** Starts a scan and follows it with a progress bar until it finishes. */
const Refresh = ({ name, onDone }: { readonly name: string; readonly onDone: () => void }) => {
  const [status, setStatus] = useState<RefreshStatus | null>(null)
  const action = useAction()
  const running = status?.state === "running"
  useEffect(() => {
    if (!running) return
    const timer = setTimeout(async () => {
      const next = await action.perform((client) => client.schema.refreshStatus({ path: { name } }))
      if (next === undefined) return setStatus(null)
      setStatus(next)
      if (next.state !== "running") onDone()
    }, POLL_MS)
    return () => clearTimeout(timer)
  }, [status])
  const start = async () => {
    const started = await action.perform((client) => client.schema.refresh({ path: { name } }))
    if (started !== undefined) setStatus(started)
  }
  const done = status?.tables_done ?? 0
  const total = status?.tables_total ?? null
  return (
    <div className="refresh">
      <button type="button" onClick={start} disabled={running || action.pending}>
        {running ? "Refreshing…" : "Refresh schema"}
      </button>
      {status !== null && (
        <div role="status" className="small">
          {status.state === "running" ? (
            <>
              <progress max={total ?? undefined} value={total === null ? undefined : done} aria-label="Schema refresh progress" /> {status.phase}
              {total !== null && ` · ${done}/${total} tables`}
            </>
          ) : status.state === "failed" ? (
            <span className="bad">Refresh failed: {status.error}</span>
          ) : (
            <span className="ok">Refreshed{status.changed === true ? ": the schema changed" : status.changed === false ? ": no changes" : ""}</span>
          )}
        </div>
      )}
      <ErrorBanner error={action.error} />
    </div>
  )
}

/** Schemas, then tables, then columns, as native disclosure widgets (keyboard and screen-reader friendly as they are). */
const SchemaTree = ({ tables, selected, onSelect }: { readonly tables: ReadonlyArray<Table>; readonly selected: string | null; readonly onSelect: (table: string) => void }) => {
  const bySchema = useMemo(() => {
    const groups = new Map<string, Array<Table>>()
    for (const t of tables) groups.set(t.schema, [...(groups.get(t.schema) ?? []), t])
    return [...groups]
  }, [tables])
  if (tables.length === 0) return <Empty>The scan found no tables this connection may read.</Empty>
  return (
    <ul className="tree" aria-label="Schema tree">
      {bySchema.map(([schema, members]) => (
        <li key={schema}>
          <details open={bySchema.length === 1}>
            <summary>
              {schema} <span className="muted small">({members.length})</span>
            </summary>
            <ul>
              {members.map((t) => (
                <li key={t.name}>
                  <details>
                    <summary>
                      <button type="button" className="link" aria-current={selected === qualified(t) ? "true" : undefined} onClick={() => onSelect(qualified(t))}>
                        {t.name}
                      </button>
                      {t.kind !== "table" && <span className="muted small"> {t.kind}</span>}
                    </summary>
                    <ul>
                      {t.columns.map((c) => (
                        <li key={c.name} className="small">
                          {c.name} <span className="muted">{c.type}</span>
                          {c.pii !== null && <span className="badge">{c.pii}</span>}
                        </li>
                      ))}
                    </ul>
                  </details>
                </li>
              ))}
            </ul>
          </details>
        </li>
      ))}
    </ul>
  )
}

const SearchResults = ({ name, q, onSelect }: { readonly name: string; readonly q: string; readonly onSelect: (table: string) => void }) => {
  const settled = useDebounced(q, 200)
  const [found, reload] = useApi((client) => (settled === "" ? Effect.succeed(null) : client.schema.search({ path: { name }, urlParams: { q: settled, limit: 30 } })), [name, settled])
  return (
    <Loaded value={found} what="matches" onRetry={reload}>
      {(result) =>
        result === null ? null : result.tables.length === 0 && result.columns.length === 0 ? (
          <Empty>Nothing matches “{result.query}”.</Empty>
        ) : (
          <ul className="tree" aria-label="Search results">
            {result.tables.map((t) => (
              <li key={t.table}>
                <button type="button" className="link" onClick={() => onSelect(t.table)}>
                  {t.table}
                </button>
                {t.comment !== null && <span className="muted small"> — {t.comment}</span>}
              </li>
            ))}
            {result.columns.map((c) => (
              <li key={`${c.table}.${c.column.name}`} className="small">
                <button type="button" className="link" onClick={() => onSelect(c.table)}>
                  {c.table}.{c.column.name}
                </button>{" "}
                <span className="muted">{c.column.type}</span>
              </li>
            ))}
          </ul>
        )
      }
    </Loaded>
  )
}

const TableDetail = ({ name, table, onChanged }: { readonly name: string; readonly table: Table; readonly onChanged: () => void }) => {
  const [relationships, reload] = useApi(
    (client) => client.schema.relationships({ path: { name }, urlParams: { table: qualified(table), include_inferred: true } }),
    [name, qualified(table)]
  )
  return (
    <article aria-labelledby="table-title">
      <h2 id="table-title">
        {qualified(table)} <span className="muted small">{table.kind}</span>
        {table.endorsement !== null && <span className={`badge endorsement-${table.endorsement}`}>{table.endorsement}</span>}
      </h2>
      {table.comment !== null && (
        <p>
          {table.comment} {sourceLabel(table.description_source) !== null && <span className="muted small">({sourceLabel(table.description_source)})</span>}
        </p>
      )}
      {table.endorsement_note !== null && <p className="small">Endorsement note: {table.endorsement_note}</p>}
      <TableCuration key={qualified(table)} name={name} table={table} qualified={qualified(table)} onSaved={onChanged} />
      <p className="muted small">
        {table.row_estimate !== null && `~${table.row_estimate.toLocaleString()} rows · `}
        primary key: {table.primary_key.length > 0 ? table.primary_key.join(", ") : "none"}
      </p>
      <div className="scroll-x">
        <table aria-label="Columns">
          <TableHead columns={["Column", "Type", "Null", "Description"]} />
          <tbody>
            {table.columns.map((c) => (
              <tr key={c.name}>
                <td>
                  {c.name}
                  {c.primary_key && <span className="badge key">PK</span>}
                  {c.pii !== null && <span className="badge">PII: {c.pii}</span>}
                  {c.endorsement !== null && <span className={`badge endorsement-${c.endorsement}`}>{c.endorsement}</span>}
                </td>
                <td className="sql">{c.type}</td>
                <td>{c.nullable ? "yes" : "no"}</td>
                <td className="small">{c.comment}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {table.indexes.length > 0 && (
        <p className="small">
          Indexes: {table.indexes.map((i) => `${i.name} (${i.columns.join(", ")})${i.unique ? " unique" : ""}`).join("; ")}
        </p>
      )}
      <h3>Relationships</h3>
      <Loaded value={relationships} what="relationships" onRetry={reload}>
        {({ relationships: found }) =>
          found.length === 0 ? (
            <p className="muted small">No declared or inferred relationships.</p>
          ) : (
            <ul className="small">
              {found.map((r) => (
                <li key={`${r.from_table}.${r.from_columns.join()}→${r.to_table}`}>
                  {r.from_table}({r.from_columns.join(", ")}) → {r.to_table}({r.to_columns.join(", ")}) <span className="muted">{r.kind === "declared" ? "foreign key" : `inferred, ${Math.round(r.confidence * 100)} %`}</span>
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
    </article>
  )
}
