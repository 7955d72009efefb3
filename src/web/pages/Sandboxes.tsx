import { useState } from "react"
import { useApi, useAction } from "../client/useApi"
import { ConfirmButton } from "../components/ConfirmButton"
import { ConnectionPicker, useChosenConnection } from "../components/ConnectionPicker"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { TableHead } from "../components/TableHead"
import { formatTime } from "../format"

const EXAMPLE = `import sluice
r = sluice.query("select 1 as one")
print(r.columns, r.rows)`

/** The caller's sandboxes: make one, run code in it (its queries go through the gate), see what it printed, delete it. */
export const SandboxesPage = () => {
  const [sandboxes, reload] = useApi((client) => client.sandboxes.list({ urlParams: { limit: 200 } }))
  const { connections, chosen, choose } = useChosenConnection()
  const [label, setLabel] = useState("")
  const [open, setOpen] = useState<string | null>(null)
  const act = useAction()
  const create = async () => {
    const made = await act.perform((client) => client.sandboxes.create({ payload: { ...(label.trim() === "" ? {} : { label: label.trim() }), ...(chosen === "" ? {} : { connection_name: chosen }) } }))
    if (made !== undefined) {
      setLabel("")
      setOpen(made.id)
      reload()
    }
  }
  return (
    <section aria-labelledby="sandboxes-title">
      <h1 id="sandboxes-title">Sandboxes</h1>
      <p className="muted">
        Python next to your data, isolated (no network, a private work directory, limits on memory, CPU and output). Code reads data only through the gateway,
        as you: <code>import sluice; sluice.query(sql)</code>, read-only, masked and audited like any query. Idle sandboxes are snapshotted and resume on their next run.
        "Open notebook" opens your Jupyter notebook session (your files are kept between sessions) in a new tab.
      </p>
      <ErrorBanner error={act.error} />
      <form
        aria-label="New sandbox"
        className="row"
        onSubmit={(e) => {
          e.preventDefault()
          void create()
        }}
      >
        <label>
          Label
          <input value={label} maxLength={200} onChange={(e) => setLabel(e.target.value)} placeholder="optional" />
        </label>
        {connections.state === "ready" && connections.value.items.length > 0 && <ConnectionPicker items={connections.value.items} value={chosen} onChange={choose} />}
        <button type="submit" disabled={act.pending}>
          New sandbox
        </button>{" "}
        <button
          type="button"
          className="secondary"
          disabled={act.pending}
          onClick={async () => {
            // Opened first, while the click still allows a new tab; pointed at the session once it runs.
            const tab = window.open("about:blank", "_blank")
            // The notebook's page (another origin, running what notebooks write) gets no handle on this one.
            if (tab !== null) tab.opener = null
            const session = await act.perform((client) => client.notebookSessions.start({ payload: chosen === "" ? {} : { connection_name: chosen } }))
            // Notebooks have an origin of their own; the one-time link signs this browser in to the session there.
            if (session !== undefined && tab !== null) tab.location.href = session.open_url ?? session.url
            else tab?.close()
          }}
        >
          Open notebook
        </button>
      </form>
      <Loaded value={sandboxes} what="sandboxes" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No sandboxes yet.</Empty>
          ) : (
            <div className="scroll-x">
              <table>
                <TableHead columns={["Sandbox", "Status", "Connection", "Runs", "Queries", "Last used"]} actions="Actions" />
                <tbody>
                  {page.items.map((sandbox) => (
                    <tr key={sandbox.id}>
                      <td className="clip">{sandbox.label ?? sandbox.id}</td>
                      <td title={sandbox.error ?? undefined}>{sandbox.status}</td>
                      <td>{sandbox.connection_name ?? "any"}</td>
                      <td>{sandbox.executions}</td>
                      <td>{sandbox.queries}</td>
                      <td>{formatTime(new Date(sandbox.last_used_at))}</td>
                      <td className="actions">
                        <button type="button" className="link" aria-pressed={open === sandbox.id} onClick={() => setOpen(open === sandbox.id ? null : sandbox.id)}>
                          {open === sandbox.id ? "Close" : "Open"}
                        </button>{" "}
                        <ConfirmButton
                          label="Delete"
                          confirm={`Delete ${sandbox.label ?? sandbox.id}?`}
                          disabled={act.pending}
                          onConfirm={async () => {
                            const done = await act.perform((client) => client.sandboxes.remove({ path: { id: sandbox.id } }))
                            if (done !== undefined) {
                              if (open === sandbox.id) setOpen(null)
                              reload()
                            }
                          }}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loaded>
      {open !== null && <SandboxConsole key={open} id={open} onRan={reload} />}
    </section>
  )
}

interface Output {
  readonly success: boolean
  readonly stdout: string
  readonly stderr: string
  readonly error: string | null
  readonly execution_ms: number
  readonly truncated: boolean
}

/** One sandbox's code and what each run printed, newest last. */
const SandboxConsole = ({ id, onRan }: { readonly id: string; readonly onRan: () => void }) => {
  const [code, setCode] = useState(EXAMPLE)
  const [outputs, setOutputs] = useState<ReadonlyArray<Output>>([])
  const act = useAction()
  const runCode = async () => {
    const result = await act.perform((client) => client.sandboxes.execute({ path: { id }, payload: { code } }))
    if (result !== undefined) {
      setOutputs((previous) => [...previous.slice(-19), result])
      onRan()
    }
  }
  return (
    <article className="sandbox" aria-label={`Sandbox ${id}`}>
      <h2>Run code</h2>
      <ErrorBanner error={act.error} />
      <label>
        Code
        <textarea
          className="code"
          rows={8}
          spellCheck={false}
          value={code}
          onChange={(e) => setCode(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) void runCode()
          }}
        />
      </label>
      <button type="button" disabled={act.pending || code.trim() === ""} onClick={() => void runCode()}>
        {act.pending ? "Running…" : "Run"}
      </button>
      <ol className="outputs" aria-label="Output">
        {outputs.map((output, index) => (
          <li key={index} className={output.success ? "" : "failed"}>
            {output.stdout !== "" && <pre className="stdout">{output.stdout}</pre>}
            {output.stderr !== "" && <pre className="stderr">{output.stderr}</pre>}
            {output.error !== null && <pre className="error">{output.error}</pre>}
            <span className="muted">
              {output.success ? "ok" : "failed"} in {output.execution_ms.toFixed(1)} ms{output.truncated ? " (output cut at 1 MiB)" : ""}
            </span>
          </li>
        ))}
      </ol>
    </article>
  )
}
