import { type FormEvent, useState } from "react"
import { isLocalKeyId } from "../../domain/Ids"
import { ALL_SCOPES, type Scope } from "../../domain/Scope"
import { ConfirmButton } from "../components/ConfirmButton"
import { CopyButton } from "../components/CopyButton"
import { TableHead } from "../components/TableHead"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { useAction, useApi } from "../client/useApi"
import { formatTime } from "../format"

const DEFAULT_SCOPES: ReadonlyArray<Scope> = ["read", "query"]

export const KeysPage = () => {
  const [keys, reload] = useApi((client) => client.keys.list({ urlParams: { limit: 200 } }))
  const [created, setCreated] = useState<{ readonly name: string; readonly key: string } | null>(null)
  const remove = useAction()
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <CreateKey onCreated={(key) => (setCreated(key), reload())} />
      {created !== null && (
        <div className="notice" role="status">
          <p>
            <strong>Copy the key for “{created.name}” now.</strong> It is shown once: Sluice keeps only its hash.
          </p>
          <p className="key-once">
            <code data-testid="new-key">{created.key}</code> <CopyButton text={created.key} label="Copy key" />
          </p>
          <button type="button" onClick={() => setCreated(null)}>
            I have saved it
          </button>
        </div>
      )}
      <ErrorBanner error={remove.error} />
      <Loaded value={keys} what="keys" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No keys yet.</Empty>
          ) : (
            <div className="scroll-x">
              <table>
                <TableHead columns={["Name", "Prefix", "Scopes", "Last used", "Expires"]} actions="Actions" />
                <tbody>
                  {page.items.map((key) => (
                    <tr key={key.id}>
                      <td>{key.name}</td>
                      <td>
                        <code>{key.prefix}…</code>
                      </td>
                      <td>{key.scopes.join(", ")}</td>
                      <td>{key.last_used_at === null ? "never" : formatTime(key.last_used_at)}</td>
                      <td>{key.expires_at === null ? "never" : formatTime(key.expires_at)}</td>
                      <td>
                        {isLocalKeyId(key.id) ? (
                          <span className="muted" title="This machine's web app and CLI sign in with it; SP_LOCAL_ACCESS=false turns local access off">
                            Local key
                          </span>
                        ) : (
                          <ConfirmButton
                            label="Delete"
                            confirm={`Delete “${key.name}”? Tools using it stop working at once.`}
                            disabled={remove.pending}
                            onConfirm={() => remove.perform((client) => client.keys.remove({ path: { key_id: key.id } })).then(reload)}
                          />
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loaded>
    </section>
  )
}

const CreateKey = ({ onCreated }: { readonly onCreated: (key: { readonly name: string; readonly key: string }) => void }) => {
  const [name, setName] = useState("")
  const [scopes, setScopes] = useState<ReadonlyArray<Scope>>(DEFAULT_SCOPES)
  const [expires, setExpires] = useState("")
  const create = useAction()
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    const made = await create.perform((client) =>
      client.keys.create({ payload: { name, scopes, ...(expires === "" ? {} : { expires_at: new Date(`${expires}T23:59:59Z`) }) } })
    )
    if (made !== undefined) {
      onCreated({ name: made.name, key: made.key })
      setName("")
      setScopes(DEFAULT_SCOPES)
      setExpires("")
    }
  }
  return (
    <form className="card" onSubmit={submit} aria-label="Create an API key">
      <h2>Create a key</h2>
      <div className="row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={64} placeholder="claude-desktop" />
        </label>
        <label>
          Expires (optional)
          <input type="date" value={expires} onChange={(e) => setExpires(e.target.value)} />
        </label>
      </div>
      <fieldset>
        <legend>Scopes</legend>
        {ALL_SCOPES.map((scope) => (
          <label key={scope} className="check">
            <input
              type="checkbox"
              checked={scopes.includes(scope)}
              onChange={(e) => setScopes(e.target.checked ? [...scopes, scope] : scopes.filter((s) => s !== scope))}
            />
            {scope}
          </label>
        ))}
      </fieldset>
      <ErrorBanner error={create.error} />
      <button type="submit" className="primary" disabled={create.pending}>
        {create.pending ? "Creating…" : "Create key"}
      </button>
    </form>
  )
}
