import { type FormEvent, useState } from "react"
import { CATEGORIES_OF, type KnowledgeCategory, type KnowledgeEntry, type KnowledgeScope } from "../../domain/Knowledge"
import { useAction, useApi } from "../client/useApi"
import { ConfirmButton } from "../components/ConfirmButton"
import { Link } from "../components/Link"
import { Markdown } from "../components/Markdown"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { TableHead } from "../components/TableHead"
import { formatTime } from "../format"
import { lineDiff } from "../lineDiff"
import { useDebounced } from "../useDebounced"

const place = (entry: { readonly scope: string; readonly scope_ref: string | null; readonly category: string }) =>
  `${entry.scope}${entry.scope_ref === null ? "" : ` ${entry.scope_ref}`} · ${entry.category}`

const statusLabel = (status: string) => (status === "pending" ? "proposed, not approved" : status)

/** An entry in a list: its title to open it, its place, and what else the list says of it. */
const EntryItem = ({ entry, note, snippet, onOpen }: {
  readonly entry: { readonly id: string; readonly title: string; readonly scope: string; readonly scope_ref: string | null; readonly category: string }
  readonly note: string
  readonly snippet?: string
  readonly onOpen: (id: string) => void
}) => (
  <li>
    <button type="button" className="link" onClick={() => onOpen(entry.id)}>
      {entry.title}
    </button>{" "}
    <span className="muted small">
      {place(entry)}
      {note}
    </span>
    {snippet !== undefined && <div className="muted small clip">{snippet}</div>}
  </li>
)

type Opened = { readonly kind: "entry"; readonly id: string } | { readonly kind: "new" } | null

/** What the organization knows about its data: search, read, write, review agents' proposals, history and usage. */
export const KnowledgePage = () => {
  const [query, setQuery] = useState("")
  const [category, setCategory] = useState<KnowledgeCategory | "">("")
  const q = useDebounced(query.trim(), 250)
  const filter = category === "" ? {} : { category }
  const [entries, reload] = useApi((client) => client.knowledge.list({ urlParams: { ...filter, ...(q === "" ? { limit: 100 } : { q, limit: 20 }) } }), [q, category])
  const [pending, reloadPending] = useApi((client) => client.knowledge.list({ urlParams: { status: "pending", limit: 100 } }))
  const [opened, setOpened] = useState<Opened>(null)
  const [showUsage, setShowUsage] = useState(false)
  const changed = () => (reload(), reloadPending())
  const open = (id: string) => setOpened({ kind: "entry", id })
  return (
    <section aria-labelledby="knowledge-title">
      <h1 id="knowledge-title">Knowledge</h1>
      <p className="muted">
        What the organization knows about its data: every agent and MCP client starts from the approved entries (<code>get_knowledge</code>). Agents' proposals wait here
        for an admin.{" "}
        <button type="button" className="link" onClick={() => setOpened({ kind: "new" })}>
          New entry
        </button>{" "}
        <button type="button" className="link" aria-pressed={showUsage} onClick={() => setShowUsage(!showUsage)}>
          {showUsage ? "Hide usage" : "Usage"}
        </button>
      </p>
      <Loaded value={pending} what="proposals" onRetry={reloadPending}>
        {(page) =>
          page.items.length === 0 ? null : (
            <div className="notice" role="region" aria-label="To review">
              <h2>To review</h2>
              <ul className="plain">
                {page.items.map((entry) => (
                  <EntryItem key={entry.id} entry={entry} note={` · proposed by ${entry.updated_by}`} onOpen={open} />
                ))}
              </ul>
            </div>
          )
        }
      </Loaded>
      {showUsage && <Usage />}
      <div className="row">
        <label>
          Search
          <input type="search" value={query} onChange={(e) => setQuery(e.target.value)} placeholder="how do we count revenue?" maxLength={500} />
        </label>
        <label>
          Category
          <select value={category} onChange={(e) => setCategory(e.target.value as KnowledgeCategory | "")}>
            <option value="">all</option>
            {CATEGORIES_OF.project.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
      </div>
      <Loaded value={entries} what="entries" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>{q === "" ? "No entries yet: write the first one with New entry." : "Nothing matches."}</Empty>
          ) : (
            <ul className="plain entries" aria-label={q === "" ? "Entries" : "Search results"}>
              {page.items.map((entry) => (
                <EntryItem key={entry.id} entry={entry} note={entry.status === "active" ? "" : ` · ${statusLabel(entry.status)}`} snippet={entry.snippet} onOpen={open} />
              ))}
            </ul>
          )
        }
      </Loaded>
      {opened?.kind === "new" && <Editor onSaved={(entry) => (setOpened({ kind: "entry", id: entry.id }), changed())} onCancel={() => setOpened(null)} />}
      {opened?.kind === "entry" && <EntryView key={opened.id} id={opened.id} onChanged={changed} />}
    </section>
  )
}

const EntryView = ({ id, onChanged }: { readonly id: string; readonly onChanged: () => void }) => {
  const [entry, reload] = useApi((client) => client.knowledge.get({ path: { id } }), [id])
  const [mode, setMode] = useState<"read" | "edit" | "history">("read")
  const act = useAction()
  // A proposal evaluated on the live base: an evaluation run of its own (staff of an allow-listed organization).
  const evaluating = useAction()
  const [evaluation, setEvaluation] = useState<string | null>(null)
  const done = (result: unknown) => {
    if (result !== undefined) (reload(), onChanged())
  }
  return (
    <Loaded value={entry} what="the entry" onRetry={reload}>
      {(shown) => (
        <article className="knowledge-entry" aria-label={`Entry: ${shown.title}`}>
          <h2>{shown.title}</h2>
          <p className="muted small">
            {place(shown)} · <span className={`entry-status ${shown.status}`}>{statusLabel(shown.status)}</span> · version{" "}
            {shown.version} · updated {formatTime(shown.updated_at)} by {shown.updated_by} · read {shown.view_count} times
          </p>
          <div className="actions">
            {shown.status === "pending" && (
              <button type="button" className="primary" disabled={act.pending} onClick={async () => done(await act.perform((c) => c.knowledge.approve({ path: { id } })))}>
                Approve
              </button>
            )}{" "}
            {shown.status === "pending" && (
              <button
                type="button"
                disabled={evaluating.pending}
                onClick={async () => {
                  const run = await evaluating.perform((c) => c.evals.startRun({ payload: { doc_ids: [id] } }))
                  if (run !== undefined) setEvaluation(run.id)
                }}
              >
                Evaluate this proposal
              </button>
            )}{" "}
            <button type="button" aria-pressed={mode === "edit"} onClick={() => setMode(mode === "edit" ? "read" : "edit")}>
              Edit
            </button>{" "}
            <button type="button" aria-pressed={mode === "history"} onClick={() => setMode(mode === "history" ? "read" : "history")}>
              History
            </button>{" "}
            {shown.status !== "archived" && (
              <ConfirmButton label="Archive" confirm={`Archive ${shown.title}?`} disabled={act.pending} onConfirm={async () => done(await act.perform((c) => c.knowledge.archive({ path: { id } })))} />
            )}
          </div>
          <ErrorBanner error={act.error} />
          <ErrorBanner error={evaluating.error} />
          {evaluation !== null && (
            <p role="status">
              Evaluation run {evaluation} started with this proposal on the live knowledge: follow it under <Link to="/evals">Evaluations</Link>, its figures under <Link to="/accuracy">Accuracy</Link>.
            </p>
          )}
          {mode === "read" && <Markdown text={shown.body} />}
          {mode === "edit" && <Editor entry={shown} onSaved={() => (setMode("read"), reload(), onChanged())} onCancel={() => setMode("read")} />}
          {mode === "history" && <History entry={shown} />}
        </article>
      )}
    </Loaded>
  )
}

/** A new entry, or a new version of one: its place, title and body, with the body previewed as it will read. */
const Editor = ({ entry, onSaved, onCancel }: { readonly entry?: KnowledgeEntry; readonly onSaved: (entry: KnowledgeEntry) => void; readonly onCancel: () => void }) => {
  const [scope, setScope] = useState<KnowledgeScope>(entry?.scope ?? "org")
  const [scopeRef, setScopeRef] = useState(entry?.scope_ref ?? "")
  const [category, setCategory] = useState<KnowledgeCategory>(entry?.category ?? "context")
  const [title, setTitle] = useState(entry?.title ?? "")
  const [body, setBody] = useState(entry?.body ?? "")
  const act = useAction()
  const categories = CATEGORIES_OF[scope]
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    const payload = { scope, ...(scope === "org" ? {} : { scope_ref: scopeRef }), category, title, body }
    const saved = await act.perform((client) => (entry === undefined ? client.knowledge.create({ payload }) : client.knowledge.update({ path: { id: entry.id }, payload })))
    if (saved !== undefined) onSaved(saved)
  }
  return (
    <form className="knowledge-editor" aria-label={entry === undefined ? "New entry" : "Edit entry"} onSubmit={submit}>
      <div className="row">
        <label>
          Scope
          <select
            value={scope}
            onChange={(e) => {
              const next = e.target.value as KnowledgeScope
              setScope(next)
              if (!CATEGORIES_OF[next].includes(category)) setCategory(CATEGORIES_OF[next][0]!)
            }}
          >
            <option value="org">organization</option>
            <option value="project">project</option>
            <option value="connection">connection</option>
          </select>
        </label>
        {scope !== "org" && (
          <label>
            {scope === "project" ? "Project" : "Connection"}
            <input value={scopeRef} onChange={(e) => setScopeRef(e.target.value)} required maxLength={200} />
          </label>
        )}
        <label>
          Category
          <select value={category} onChange={(e) => setCategory(e.target.value as KnowledgeCategory)}>
            {categories.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
        <label>
          Title
          <input value={title} onChange={(e) => setTitle(e.target.value)} required maxLength={120} pattern="[a-z0-9]+(-[a-z0-9]+)*" placeholder="net-revenue-definition" />
        </label>
      </div>
      <div className="editor-with-preview">
        <label>
          Body (markdown)
          <textarea value={body} onChange={(e) => setBody(e.target.value)} required rows={12} />
        </label>
        <div aria-label="Preview" role="region" className="preview">
          <Markdown text={body} />
        </div>
      </div>
      <ErrorBanner error={act.error} />
      <button type="submit" className="primary" disabled={act.pending}>
        Save
      </button>{" "}
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </form>
  )
}

/** Every earlier version kept, newest first, each with what the next version changed. */
const History = ({ entry }: { readonly entry: KnowledgeEntry }) => {
  const [edits, reload] = useApi((client) => client.knowledge.edits({ path: { id: entry.id } }), [entry.id, entry.version])
  return (
    <Loaded value={edits} what="history" onRetry={reload}>
      {({ items }) =>
        items.length === 0 ? (
          <Empty>No earlier versions.</Empty>
        ) : (
          <ol className="plain history" aria-label="History">
            {items.map((edit, n) => {
              const next = n === 0 ? entry : items[n - 1]!
              return (
                <li key={edit.version}>
                  <h3>
                    Version {edit.version} → {next.version}
                  </h3>
                  <p className="muted small">
                    written {formatTime(edit.edited_at)} by {edit.edited_by} · replaced {formatTime(edit.replaced_at)} by {edit.replaced_by}
                    {edit.status !== next.status && ` · ${edit.status} → ${next.status}`}
                  </p>
                  <pre className="diff">
                    {lineDiff(edit.body, next.body).map((line, i) => (
                      <span key={i} className={`diff-${line.kind}`}>
                        {line.kind === "added" ? "+ " : line.kind === "removed" ? "- " : "  "}
                        {line.text}
                        {"\n"}
                      </span>
                    ))}
                  </pre>
                </li>
              )
            })}
          </ol>
        )
      }
    </Loaded>
  )
}

const Usage = () => {
  const [usage, reload] = useApi((client) => client.knowledge.usage({ urlParams: {} }))
  return (
    <Loaded value={usage} what="usage" onRetry={reload}>
      {({ items }) =>
        items.length === 0 ? (
          <Empty>No entries yet.</Empty>
        ) : (
          <div className="scroll-x" role="region" aria-label="Usage">
            <table>
              <TableHead columns={["Entry", "Delivered (30 days)", "Keys", "Last delivered", "Read"]} />
              <tbody>
                {items.map((row) => (
                  <tr key={row.entry_id}>
                    <td>{row.title}</td>
                    <td>{row.retrievals}</td>
                    <td>{row.keys}</td>
                    <td>{row.last_retrieved_at === null ? "never" : formatTime(row.last_retrieved_at)}</td>
                    <td>{row.view_count}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      }
    </Loaded>
  )
}
