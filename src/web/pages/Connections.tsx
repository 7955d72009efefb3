import { type FormEvent, useState } from "react"
import { Effect, Schema } from "effect"
import { ConnectionInput } from "../../domain/Connection"
import { ConfirmButton } from "../components/ConfirmButton"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { useAction, useApi } from "../client/useApi"
import { DB_TYPES, fieldsFor, labelOf } from "../connectionFields"

type TestOutcome = { readonly ok: boolean; readonly latency_ms: number; readonly error?: string | undefined; readonly step?: string | undefined }

export const ConnectionsPage = () => {
  const [connections, reload] = useApi((client) => client.connections.list({ urlParams: {} }))
  const [health] = useApi((client) => client.connectionHealth.list({ urlParams: {} }))
  const [adding, setAdding] = useState(false)
  const [tests, setTests] = useState<Record<string, TestOutcome>>({})
  const action = useAction()
  const statusOf = (name: string) => (health.state === "ready" ? health.value.items.find((h) => h.name === name)?.status : undefined) ?? "unknown"
  const test = async (name: string) => {
    const result = await action.perform((client) => client.connections.test({ path: { name } }))
    if (result !== undefined) setTests((all) => ({ ...all, [name]: result }))
  }
  return (
    <section aria-labelledby="connections-title">
      <div className="heading">
        <h1 id="connections-title">Connections</h1>
        {!adding && (
          <button type="button" className="primary" onClick={() => setAdding(true)}>
            Add connection
          </button>
        )}
      </div>
      {adding && <AddConnection onDone={(added) => (setAdding(false), added && reload())} />}
      <ErrorBanner error={action.error} />
      <Loaded value={connections} what="connections" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No connections yet. Add one to run governed queries against it.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Where</th>
                  <th scope="col">Test</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((c) => {
                  const outcome = tests[c.name]
                  return (
                    <tr key={c.name}>
                      <td>
                        <span className={`dot dot-${statusOf(c.name)}`} role="img" aria-label={`health: ${statusOf(c.name)}`} /> {c.name}
                      </td>
                      <td>{c.db_type}</td>
                      <td className="muted">{[c.host, c.database].filter((part) => part !== undefined).join(" / ")}</td>
                      <td>
                        <button type="button" onClick={() => test(c.name)} disabled={action.pending}>
                          Test
                        </button>{" "}
                        {outcome !== undefined && (
                          <span className={outcome.ok ? "ok" : "bad"} role="status">
                            {outcome.ok ? `Connected in ${Math.round(outcome.latency_ms)} ms` : `Failed${outcome.step ? ` at ${outcome.step}` : ""}: ${outcome.error ?? ""}`}
                          </span>
                        )}
                      </td>
                      <td>
                        <ConfirmButton
                          label="Delete"
                          confirm={`Delete connection “${c.name}”?`}
                          onConfirm={() => action.perform((client) => client.connections.remove({ path: { name: c.name } })).then(reload)}
                        />
                      </td>
                    </tr>
                  )
                })}
              </tbody>
            </table>
          )
        }
      </Loaded>
    </section>
  )
}

const AddConnection = ({ onDone }: { readonly onDone: (added: boolean) => void }) => {
  const [dbType, setDbType] = useState("postgresql")
  const [name, setName] = useState("")
  const [values, setValues] = useState<Record<string, string>>({})
  const [url, setUrl] = useState("")
  const save = useAction()
  const parse = useAction()
  const fields = fieldsFor(dbType)
  const fillFromUrl = async () => {
    const parsed = await parse.perform((client) => client.connectionUrls.parse({ payload: { url } }))
    if (parsed === undefined) return
    setDbType(parsed.db_type)
    setValues(Object.fromEntries(Object.entries(parsed.fields).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => [k, String(v)])))
  }
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    const body: Record<string, unknown> = { db_type: dbType, name }
    for (const field of fields) {
      const value = values[field.name]?.trim() ?? ""
      if (value !== "") body[field.name] = field.kind === "number" ? Number(value) : value
    }
    // Checked here with the Schema the gateway checks with, so a mistake is named before anything is sent.
    const created = await save.perform((client) =>
      Effect.flatMap(Schema.decodeUnknown(ConnectionInput)(body, { errors: "first" }), (payload) =>
        client.connections.create({ payload } as Parameters<typeof client.connections.create>[0])
      )
    )
    if (created !== undefined) onDone(true)
  }
  return (
    <form className="card" onSubmit={submit} aria-label="Add a connection">
      <h2>Add a connection</h2>
      <div className="row">
        <label className="grow">
          Paste a URL (optional)
          <input value={url} onChange={(e) => setUrl(e.target.value)} placeholder="postgresql://user@host:5432/db" spellCheck={false} />
        </label>
        <button type="button" onClick={fillFromUrl} disabled={url.trim() === "" || parse.pending}>
          Fill from URL
        </button>
      </div>
      <ErrorBanner error={parse.error} />
      <div className="grid-form">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required pattern="[A-Za-z0-9_\-]{1,64}" placeholder="analytics" />
        </label>
        <label>
          Type
          <select value={dbType} onChange={(e) => (setDbType(e.target.value), setValues({}))}>
            {DB_TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        {fields.map((field) => (
          <label key={`${dbType}.${field.name}`}>
            {labelOf(field.name)}
            {!field.required && <span className="muted small"> (optional)</span>}
            {field.kind === "choice" ? (
              <select value={values[field.name] ?? ""} onChange={(e) => setValues({ ...values, [field.name]: e.target.value })}>
                <option value="">—</option>
                {field.choices.map((c) => (
                  <option key={c}>{c}</option>
                ))}
              </select>
            ) : field.kind === "secret-text" ? (
              <textarea value={values[field.name] ?? ""} onChange={(e) => setValues({ ...values, [field.name]: e.target.value })} rows={4} spellCheck={false} />
            ) : (
              <input
                type={field.kind === "secret" ? "password" : field.kind === "number" ? "number" : "text"}
                autoComplete={field.kind === "secret" ? "new-password" : "off"}
                required={field.required}
                value={values[field.name] ?? ""}
                onChange={(e) => setValues({ ...values, [field.name]: e.target.value })}
              />
            )}
          </label>
        ))}
      </div>
      <p className="muted small">Secrets are write-only: they are encrypted at rest and never shown again.</p>
      <ErrorBanner error={save.error} />
      <div className="actions">
        <button type="submit" className="primary" disabled={save.pending}>
          {save.pending ? "Saving…" : "Save connection"}
        </button>
        <button type="button" onClick={() => onDone(false)}>
          Cancel
        </button>
      </div>
    </form>
  )
}
