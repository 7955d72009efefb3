import { type FormEvent, Fragment, useId, useState } from "react"
import { Effect, Schema } from "effect"
import type { DiagnoseResult } from "../../api/ConnectionsApi"
import { type Connection, ConnectionInput } from "../../domain/Connection"
import { ConfirmButton } from "../components/ConfirmButton"
import { TableHead } from "../components/TableHead"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { useAction, useApi } from "../client/useApi"
import { DB_TYPES, FIELD_GROUPS, type FormField, GROUP_NOTES, fieldsFor, formInput, formValuesOf, isSecret, secretStored } from "../connectionFields"

type TestOutcome = { readonly ok: boolean; readonly latency_ms: number; readonly error?: string | undefined; readonly step?: string | undefined }

type Editing = { readonly mode: "closed" } | { readonly mode: "add" } | { readonly mode: "edit"; readonly connection: Connection }

export const ConnectionsPage = () => {
  const [connections, reload] = useApi((client) => client.connections.list({ urlParams: {} }))
  const [health, reloadHealth] = useApi((client) => client.connectionHealth.list({ urlParams: {} }))
  const [editing, setEditing] = useState<Editing>({ mode: "closed" })
  const [tests, setTests] = useState<Record<string, TestOutcome>>({})
  const [diagnoses, setDiagnoses] = useState<Record<string, Diagnosis>>({})
  const action = useAction()
  const statusOf = (name: string) => (health.state === "ready" ? health.value.items.find((h) => h.name === name)?.status : undefined) ?? "unknown"
  const test = async (name: string) => {
    const result = await action.perform((client) => client.connections.test({ path: { name } }))
    if (result === undefined) return
    setTests((all) => ({ ...all, [name]: result }))
    // The gateway keeps a test as a health check: the dot shows it.
    reloadHealth()
  }
  const diagnose = async (name: string) => {
    const result = await action.perform((client) => client.connections.diagnose({ path: { name } }))
    if (result !== undefined) setDiagnoses((all) => ({ ...all, [name]: result }))
  }
  const clone = (from: string, name: string) => action.perform((client) => client.connections.clone({ path: { name: from }, payload: { name } })).then(reload)
  const closeForm = (saved: boolean) => {
    setEditing({ mode: "closed" })
    if (saved) reload()
  }
  return (
    <section aria-labelledby="connections-title">
      <div className="heading">
        <h1 id="connections-title">Connections</h1>
        {editing.mode === "closed" && (
          <button type="button" className="primary" onClick={() => setEditing({ mode: "add" })}>
            Add connection
          </button>
        )}
      </div>
      {editing.mode !== "closed" && (
        <ConnectionForm key={editing.mode === "edit" ? editing.connection.name : ""} existing={editing.mode === "edit" ? editing.connection : null} onDone={closeForm} />
      )}
      <ErrorBanner error={action.error} />
      <Loaded value={connections} what="connections" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No connections yet. Add one to run governed queries against it.</Empty>
          ) : (
            <div className="scroll-x">
              <table>
                <TableHead columns={["Name", "Type", "Where", "Check"]} actions="Actions" />
                <tbody>
                  {page.items.map((c) => {
                    const outcome = tests[c.name]
                    const diagnosis = diagnoses[c.name]
                    return (
                      <Fragment key={c.name}>
                        <tr>
                          <td>
                            <span className={`dot dot-${statusOf(c.name)}`} role="img" aria-label={`health: ${statusOf(c.name)}`} /> {c.name}
                          </td>
                          <td>{c.db_type}</td>
                          <td className="muted">{[c.host, c.database].filter((part) => part !== undefined).join(" / ")}</td>
                          <td>
                            <button type="button" onClick={() => test(c.name)} disabled={action.pending}>
                              Test
                            </button>{" "}
                            <button type="button" onClick={() => diagnose(c.name)} disabled={action.pending}>
                              Diagnose
                            </button>{" "}
                            {outcome !== undefined && (
                              <span className={outcome.ok ? "ok" : "bad"} role="status">
                                {outcome.ok ? `Connected in ${Math.round(outcome.latency_ms)} ms` : `Failed${outcome.step ? ` at ${outcome.step}` : ""}: ${outcome.error ?? ""}`}
                              </span>
                            )}
                          </td>
                          <td className="nowrap">
                            <button type="button" onClick={() => setEditing({ mode: "edit", connection: c })} disabled={c.read_only} title={c.read_only ? "Configured by environment: read-only" : undefined}>
                              Edit
                            </button>{" "}
                            <CloneButton from={c.name} onClone={(name) => clone(c.name, name)} />{" "}
                            <ConfirmButton
                              label="Delete"
                              confirm={`Delete connection “${c.name}”?`}
                              disabled={c.read_only}
                              onConfirm={() => action.perform((client) => client.connections.remove({ path: { name: c.name } })).then(reload)}
                            />
                          </td>
                        </tr>
                        {diagnosis !== undefined && (
                          <tr className="detail">
                            <td colSpan={5}>
                              <DiagnosisSteps name={c.name} diagnosis={diagnosis} />
                            </td>
                          </tr>
                        )}
                      </Fragment>
                    )
                  })}
                </tbody>
              </table>
            </div>
          )
        }
      </Loaded>
    </section>
  )
}

type Diagnosis = typeof DiagnoseResult.Type

const DiagnosisSteps = ({ name, diagnosis }: { readonly name: string; readonly diagnosis: Diagnosis }) => (
  <ol className="steps" aria-label={`Diagnosis of ${name}`}>
    {diagnosis.steps.map((s) => (
      <li key={s.step} className={`step-${s.status}`}>
        <span className="step-mark" aria-hidden="true">
          {s.status === "ok" ? "✓" : s.status === "failed" ? "✗" : "–"}
        </span>
        <strong>{s.step}</strong> <span className="muted">{s.status === "skipped" ? "skipped" : `${s.status === "ok" ? "passed" : "failed"} in ${Math.round(s.duration_ms)} ms`}</span>
        {s.detail !== "" && <span className="small"> — {s.detail}</span>}
      </li>
    ))}
  </ol>
)

const CloneButton = ({ from, onClone }: { readonly from: string; readonly onClone: (name: string) => void }) => {
  const [asking, setAsking] = useState(false)
  const [name, setName] = useState(`${from}_copy`)
  if (!asking) {
    return (
      <button type="button" onClick={() => setAsking(true)}>
        Clone
      </button>
    )
  }
  return (
    <form className="confirm" aria-label={`Clone ${from}`} onSubmit={(e) => (e.preventDefault(), setAsking(false), onClone(name))}>
      <input aria-label="New name" value={name} onChange={(e) => setName(e.target.value)} required pattern="[A-Za-z0-9_\-]{1,64}" autoFocus />
      <button type="submit">Clone</button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </form>
  )
}

const ConnectionForm = ({ existing, onDone }: { readonly existing: Connection | null; readonly onDone: (saved: boolean) => void }) => {
  const [dbType, setDbType] = useState<string>(existing?.db_type ?? "postgresql")
  const [name, setName] = useState(existing?.name ?? "")
  const [values, setValues] = useState<Record<string, string>>(() => (existing === null ? {} : formValuesOf(existing.db_type, existing)))
  const [url, setUrl] = useState("")
  const save = useAction()
  const parse = useAction()
  const id = useId()
  const fields = fieldsFor(dbType)
  // Stored secrets carry over only while the type stays the same, as the gateway's update keeps them.
  const stored = existing !== null && existing.db_type === dbType ? existing : null
  const title = existing === null ? "Add a connection" : `Edit ${existing.name}`
  const changeType = (next: string) => {
    const kept = new Set(fieldsFor(next).map((f) => f.path))
    setDbType(next)
    setValues(Object.fromEntries(Object.entries(values).filter(([path]) => kept.has(path))))
  }
  const fillFromUrl = async () => {
    const parsed = await parse.perform((client) => client.connectionUrls.parse({ payload: { url } }))
    if (parsed === undefined) return
    setDbType(parsed.db_type)
    setValues(formValuesOf(parsed.db_type, parsed.fields))
  }
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    const body = { ...formInput(dbType, values), name }
    // Checked here with the Schema the gateway checks with, so a mistake is named before anything is sent.
    const saved = await save.perform((client) =>
      Effect.flatMap(Schema.decodeUnknown(ConnectionInput)(body, { errors: "first" }), (payload) =>
        existing === null
          ? client.connections.create({ payload } as Parameters<typeof client.connections.create>[0])
          : client.connections.update({ path: { name: existing.name }, payload } as Parameters<typeof client.connections.update>[0])
      )
    )
    if (saved !== undefined) onDone(true)
  }
  return (
    <form className="card" onSubmit={submit} aria-label={title}>
      <h2>{title}</h2>
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
      {FIELD_GROUPS.map((group) => {
        const inGroup = fields.filter((f) => f.group === group)
        if (inGroup.length === 0) return null
        return (
          <fieldset key={group} className="field-group">
            <legend>{group}</legend>
            {GROUP_NOTES[group] !== undefined && <p className="muted small">{GROUP_NOTES[group]}</p>}
            <div className="grid-form">
              {group === "Connection" && (
                <>
                  <div className="field">
                    <FieldLabel htmlFor={`${id}-name`} text="Name" required="required" />
                    <input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} required pattern="[A-Za-z0-9_\-]{1,64}" placeholder="analytics" />
                  </div>
                  <div className="field">
                    <FieldLabel htmlFor={`${id}-type`} text="Type" />
                    <select id={`${id}-type`} value={dbType} onChange={(e) => changeType(e.target.value)}>
                      {DB_TYPES.map((t) => (
                        <option key={t}>{t}</option>
                      ))}
                    </select>
                  </div>
                </>
              )}
              {inGroup.map((field) => (
                <FieldInput
                  key={`${dbType}.${field.path}`}
                  id={`${id}-${field.path}`}
                  field={field}
                  value={values[field.path] ?? ""}
                  onChange={(value) => setValues({ ...values, [field.path]: value })}
                  secretKept={stored !== null && isSecret(field) && secretStored(stored, field)}
                />
              ))}
            </div>
          </fieldset>
        )
      })}
      <p className="muted small">
        Secrets are write-only: they are encrypted at rest and never shown again.{existing !== null && " Leave a secret empty to keep the stored one."}
      </p>
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

const UNCHANGED = "Unchanged unless you type a new one"

// The note sits outside the label, so a control's accessible name is its label alone.
const FieldLabel = ({ htmlFor, text, required }: { readonly htmlFor: string; readonly text: string; readonly required?: string | undefined }) => (
  <span>
    <label htmlFor={htmlFor}>{text}</label>
    {required !== undefined && <span className="muted small"> ({required})</span>}
  </span>
)

const FieldInput = ({
  id,
  field,
  value,
  onChange,
  secretKept
}: {
  readonly id: string
  readonly field: FormField
  readonly value: string
  readonly onChange: (value: string) => void
  readonly secretKept: boolean
}) => {
  const nested = field.path.includes(".")
  const notes = [field.help, secretKept ? "A value is stored; it is never shown." : undefined].filter((note) => note !== undefined)
  const hintId = `${id}-hint`
  const common = {
    id,
    value,
    onChange: (e: { readonly target: { readonly value: string } }) => onChange(e.target.value),
    "aria-describedby": notes.length > 0 ? hintId : undefined
  }
  return (
    <div className="field">
      <FieldLabel htmlFor={id} text={field.label} required={field.required ? (nested ? `required for ${field.group}` : "required") : undefined} />
      {field.kind === "choice" ? (
        <select {...common}>
          <option value="">—</option>
          {field.choices.map((c) => (
            <option key={c}>{c}</option>
          ))}
        </select>
      ) : field.kind === "list" || field.kind === "pem" || field.kind === "secret-text" ? (
        <textarea {...common} rows={3} spellCheck={false} placeholder={secretKept ? UNCHANGED : undefined} />
      ) : (
        <input
          {...common}
          type={field.kind === "secret" ? "password" : field.kind === "number" ? "number" : "text"}
          autoComplete={field.kind === "secret" ? "new-password" : "off"}
          required={field.required && !nested}
          placeholder={secretKept ? UNCHANGED : undefined}
        />
      )}
      {notes.length > 0 && (
        <span id={hintId} className="hint">
          {notes.join(" ")}
        </span>
      )}
    </div>
  )
}
