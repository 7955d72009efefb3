import { type FormEvent, useState } from "react"
import type { Connection } from "../../domain/Connection"
import { PII_ACTIONS, type PiiAction, type PiiPolicy, type PiiRule } from "../../domain/Pii"
import type { OrgSettings } from "../../domain/Settings"
import { ConfirmButton } from "../components/ConfirmButton"
import { ConnectionPicker, useChosenConnection } from "../components/ConnectionPicker"
import { Meter } from "../components/Meter"
import { TableHead } from "../components/TableHead"
import { KeySelect } from "../components/KeySelect"
import { Link } from "../components/Link"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { useAction, useApi } from "../client/useApi"
import { inputOf } from "../connectionFields"
import { formatTime } from "../format"
import { globsOf, usageOf, withRule } from "../governance"

export const GovernancePage = () => {
  const { connections, reload, chosen, choose } = useChosenConnection()
  return (
    <section aria-labelledby="governance-title">
      <h1 id="governance-title">Governance</h1>
      <Loaded value={connections} what="connections" onRetry={reload}>
        {(page) => {
          const connection = page.items.find((c) => c.name === chosen)
          return connection === undefined ? (
            <Empty>
              <Link to="/connections">Add a connection</Link> to set its PII rules and table access.
            </Empty>
          ) : (
            <>
              <div className="row">
                <ConnectionPicker items={page.items} value={chosen} onChange={choose} />
              </div>
              <PiiRules key={`pii-${chosen}`} name={chosen} />
              <TableAccess key={`tables-${chosen}-${connection.updated_at.getTime()}`} connection={connection} onSaved={reload} />
            </>
          )
        }}
      </Loaded>
      <Budgets />
      <Settings />
    </section>
  )
}

type Proposal = PiiRule & { readonly kind: string; readonly reason: string; readonly confidence: number }

const PiiRules = ({ name }: { readonly name: string }) => {
  const [policy, reload] = useApi((client) => client.pii.get({ path: { name } }))
  return (
    <div className="card">
      <h2>PII rules</h2>
      <p className="muted small">Every result from this connection masks, hashes, redacts or drops these columns, whichever tool asks.</p>
      <Loaded value={policy} what="PII rules" onRetry={reload}>
        {(saved) => <PiiEditor key={saved.version} name={name} saved={saved} onSaved={reload} />}
      </Loaded>
    </div>
  )
}

const PiiEditor = ({ name, saved, onSaved }: { readonly name: string; readonly saved: PiiPolicy; readonly onSaved: () => void }) => {
  const [rules, setRules] = useState<ReadonlyArray<PiiRule>>(saved.rules)
  const [proposals, setProposals] = useState<ReadonlyArray<Proposal> | null>(null)
  const [skipped, setSkipped] = useState<ReadonlyArray<{ readonly table: string; readonly reason: string }>>([])
  const [draft, setDraft] = useState<PiiRule>({ table: "", column: "", action: "mask" })
  const detect = useAction()
  const save = useAction()
  const dirty = JSON.stringify(rules) !== JSON.stringify(saved.rules)
  const runDetect = async () => {
    const found = await detect.perform((client) => client.pii.detect({ path: { name } }))
    if (found === undefined) return
    setProposals(found.proposed.filter((p) => !rules.some((r) => r.table.toLowerCase() === p.table.toLowerCase() && r.column.toLowerCase() === p.column.toLowerCase() && r.action === p.action)))
    setSkipped(found.skipped)
  }
  const review = (proposal: Proposal, accept: boolean) => {
    if (accept) setRules((current) => withRule(current, { table: proposal.table, column: proposal.column, action: proposal.action }))
    setProposals((current) => current?.filter((p) => p !== proposal) ?? null)
  }
  const add = (event: FormEvent) => {
    event.preventDefault()
    setRules(withRule(rules, { table: draft.table.trim(), column: draft.column.trim(), action: draft.action }))
    setDraft({ ...draft, column: "" })
  }
  const persist = async () => {
    if ((await save.perform((client) => client.pii.put({ path: { name }, payload: { rules } }))) !== undefined) onSaved()
  }
  return (
    <>
      {rules.length === 0 ? (
        <Empty>No PII rules: every column is returned as stored.</Empty>
      ) : (
        <div className="scroll-x">
          <table aria-label="PII rules">
            <TableHead columns={["Table", "Column", "Action"]} actions="Remove" />
            <tbody>
              {rules.map((r) => (
                <tr key={`${r.table}.${r.column}`}>
                  <td>{r.table}</td>
                  <td>{r.column}</td>
                  <td>
                    <ActionSelect label={`Action for ${r.table}.${r.column}`} value={r.action} onChange={(action) => setRules(withRule(rules, { ...r, action }))} />
                  </td>
                  <td>
                    <button type="button" aria-label={`Remove the rule for ${r.table}.${r.column}`} onClick={() => setRules(rules.filter((x) => x !== r))}>
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <form className="row add-rule" aria-label="Add a PII rule" onSubmit={add}>
        <label>
          Table
          <input value={draft.table} onChange={(e) => setDraft({ ...draft, table: e.target.value })} required placeholder="customers" />
        </label>
        <label>
          Column
          <input value={draft.column} onChange={(e) => setDraft({ ...draft, column: e.target.value })} required placeholder="email" />
        </label>
        <ActionSelect label="Action" value={draft.action} onChange={(action) => setDraft({ ...draft, action })} />
        <button type="submit">Add rule</button>
      </form>
      <div className="actions">
        <button type="button" className="primary" onClick={persist} disabled={!dirty || save.pending}>
          {save.pending ? "Saving…" : "Save rules"}
        </button>
        <button type="button" onClick={runDetect} disabled={detect.pending}>
          {detect.pending ? "Detecting…" : "Detect PII"}
        </button>
        {dirty && <span className="muted small">Unsaved changes</span>}
      </div>
      <ErrorBanner error={save.error} />
      <ErrorBanner error={detect.error} />
      {proposals !== null && (
        <div className="proposals">
          <h3>Proposed rules</h3>
          {proposals.length === 0 ? (
            <p className="muted small">Nothing new to review.</p>
          ) : (
            <div className="scroll-x">
              <table aria-label="Proposed PII rules">
                <tbody>
                  {proposals.map((p) => (
                    <tr key={`${p.table}.${p.column}`}>
                      <td>
                        {p.table}.{p.column}
                      </td>
                      <td>
                        {p.kind} → {p.action}
                      </td>
                      <td className="muted small">
                        {p.reason === "column_name" ? "by its name" : "by sampled values"}, {Math.round(p.confidence * 100)} %
                      </td>
                      <td className="nowrap">
                        <button type="button" onClick={() => review(p, true)} aria-label={`Accept ${p.table}.${p.column}`}>
                          Accept
                        </button>{" "}
                        <button type="button" onClick={() => review(p, false)} aria-label={`Reject ${p.table}.${p.column}`}>
                          Reject
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {skipped.length > 0 && <p className="muted small">Not sampled: {skipped.map((s) => `${s.table} (${s.reason})`).join("; ")}</p>}
        </div>
      )}
    </>
  )
}

const ActionSelect = ({ label, value, onChange }: { readonly label: string; readonly value: PiiAction; readonly onChange: (action: PiiAction) => void }) => (
  <label>
    <span className={label === "Action" ? undefined : "visually-hidden"}>{label}</span>
    <select value={value} onChange={(e) => onChange(e.target.value as PiiAction)}>
      {PII_ACTIONS.map((a) => (
        <option key={a}>{a}</option>
      ))}
    </select>
  </label>
)

const TableAccess = ({ connection, onSaved }: { readonly connection: Connection; readonly onSaved: () => void }) => {
  const [blocked, setBlocked] = useState((connection.blocked_tables ?? []).join("\n"))
  const [allowed, setAllowed] = useState((connection.allowed_tables ?? []).join("\n"))
  const save = useAction()
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    const { blocked_tables: _blocked, allowed_tables: _allowed, ...rest } = inputOf(connection)
    const payload = {
      ...rest,
      ...(globsOf(blocked).length > 0 ? { blocked_tables: globsOf(blocked) } : {}),
      ...(globsOf(allowed).length > 0 ? { allowed_tables: globsOf(allowed) } : {})
    }
    const saved = await save.perform((client) => client.connections.update({ path: { name: connection.name }, payload } as Parameters<typeof client.connections.update>[0]))
    if (saved !== undefined) onSaved()
  }
  return (
    <form className="card" aria-label="Table access" onSubmit={submit}>
      <h2>Table access</h2>
      <p className="muted small">
        One table per line: <code>table</code>, <code>schema.table</code>, with <code>*</code> for any run of characters. Blocked tables are refused in
        every query and hidden from the schema; when allowed tables are set, nothing else may be read.
      </p>
      <div className="grid-form">
        <label>
          Blocked tables
          <textarea rows={4} value={blocked} onChange={(e) => setBlocked(e.target.value)} spellCheck={false} disabled={connection.read_only} />
        </label>
        <label>
          Allowed tables (empty: all)
          <textarea rows={4} value={allowed} onChange={(e) => setAllowed(e.target.value)} spellCheck={false} disabled={connection.read_only} />
        </label>
      </div>
      <ErrorBanner error={save.error} />
      <div className="actions">
        <button type="submit" className="primary" disabled={save.pending || connection.read_only}>
          Save table access
        </button>
        {connection.read_only && <span className="muted small">Configured by environment: read-only here.</span>}
      </div>
    </form>
  )
}

const Budgets = () => {
  const [budgets, reload] = useApi((client) => client.budgets.list())
  const remove = useAction()
  return (
    <div className="card">
      <h2>Session budgets</h2>
      <CreateBudget onCreated={reload} />
      <ErrorBanner error={remove.error} />
      <Loaded value={budgets} what="budgets" onRetry={reload}>
        {({ items }) =>
          items.length === 0 ? (
            <Empty>No budgets: keys may run queries up to the rate limits.</Empty>
          ) : (
            <div className="scroll-x">
              <table aria-label="Budgets">
                <TableHead columns={["For", "Usage", "Expires"]} actions="Actions" />
                <tbody>
                  {items.map((b) => (
                    <tr key={b.id}>
                      <td>
                        {b.session !== null ? `session ${b.session}` : `key ${b.key_id}`}
                        {b.exhausted && <span className="badge">spent</span>}
                      </td>
                      <td className="grow-cell">
                        {usageOf(b).map((u) => (
                          <div key={u.label} className="usage small">
                            <span>
                              {u.label}: {u.used.toLocaleString()} / {u.limit.toLocaleString()}
                            </span>
                            <Meter value={u.used} max={u.limit} label={`${u.label} used`} limit />
                          </div>
                        ))}
                      </td>
                      <td className="small">{b.expires_at === null ? "never" : formatTime(b.expires_at)}</td>
                      <td>
                        <ConfirmButton label="Delete" confirm="Delete this budget?" onConfirm={() => remove.perform((client) => client.budgets.remove({ path: { id: b.id } })).then(reload)} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loaded>
    </div>
  )
}

const LIMITS = [
  ["max_queries", "Max queries"],
  ["max_rows", "Max rows"],
  ["max_cost", "Max cost"],
  ["max_duration_ms", "Max time (ms)"]
] as const

const CreateBudget = ({ onCreated }: { readonly onCreated: () => void }) => {
  const [keys] = useApi((client) => client.keys.list({ urlParams: { limit: 200 } }))
  const [kind, setKind] = useState<"key_id" | "session">("key_id")
  const [target, setTarget] = useState("")
  const [limits, setLimits] = useState<Record<string, string>>({})
  const [expires, setExpires] = useState("")
  const create = useAction()
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    const created = await create.perform((client) =>
      client.budgets.create({
        payload: {
          [kind]: target.trim(),
          ...Object.fromEntries(LIMITS.flatMap(([field]) => ((limits[field] ?? "") === "" ? [] : [[field, Number(limits[field])]]))),
          ...(expires !== "" ? { expires_at: new Date(expires) } : {})
        }
      })
    )
    if (created === undefined) return
    setLimits({})
    onCreated()
  }
  return (
    <form className="row" aria-label="Add a budget" onSubmit={submit}>
      <label>
        For
        <select value={kind} onChange={(e) => (setKind(e.target.value as "key_id" | "session"), setTarget(""))}>
          <option value="key_id">a key</option>
          <option value="session">a named session</option>
        </select>
      </label>
      {kind === "key_id" && keys.state === "ready" ? (
        <KeySelect keys={keys.value.items} value={target} onChange={setTarget} none="—" required />
      ) : (
        <label>
          {kind === "key_id" ? "Key id" : "Session"}
          <input value={target} onChange={(e) => setTarget(e.target.value)} required placeholder={kind === "key_id" ? "" : "nightly-report"} />
        </label>
      )}
      {LIMITS.map(([field, label]) => (
        <label key={field} className="narrow">
          {label}
          <input type="number" min={0} value={limits[field] ?? ""} onChange={(e) => setLimits({ ...limits, [field]: e.target.value })} />
        </label>
      ))}
      <label>
        Expires
        <input type="datetime-local" value={expires} onChange={(e) => setExpires(e.target.value)} />
      </label>
      <button type="submit" disabled={create.pending}>
        Add budget
      </button>
      <ErrorBanner error={create.error} />
    </form>
  )
}

const Settings = () => {
  const [settings, reload] = useApi((client) => client.system.getSettings())
  const [plan] = useApi((client) => client.system.plan())
  return (
    <div className="card">
      <h2>Defaults and limits</h2>
      <Loaded value={settings} what="settings" onRetry={reload}>
        {(current) => <SettingsForm key={JSON.stringify(current)} current={current} onSaved={reload} />}
      </Loaded>
      {plan.state === "ready" && (
        <p className="muted small">
          Rate limits: {plan.value.limits.per_key_rpm} requests a minute per key, {plan.value.limits.per_org_rpm} per organization (set in the gateway's
          configuration) · {plan.value.deployment_mode} · audit kept {plan.value.audit_retention_days === null ? "forever" : `${plan.value.audit_retention_days} days`}
        </p>
      )}
    </div>
  )
}

const SettingsForm = ({ current, onSaved }: { readonly current: OrgSettings; readonly onSaved: () => void }) => {
  const [values, setValues] = useState(current)
  const save = useAction()
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    if ((await save.perform((client) => client.system.putSettings({ payload: values }))) !== undefined) onSaved()
  }
  const number = (field: "default_row_limit" | "mcp_default_row_limit" | "query_timeout_seconds", label: string, max: number) => (
    <label>
      {label}
      <input type="number" min={1} max={max} required value={values[field]} onChange={(e) => setValues({ ...values, [field]: Number(e.target.value) })} />
    </label>
  )
  return (
    <form aria-label="Defaults" onSubmit={submit}>
      <div className="grid-form">
        {number("default_row_limit", "Default row limit", 100_000)}
        {number("mcp_default_row_limit", "MCP default row limit", 10_000)}
        {number("query_timeout_seconds", "Query timeout (s)", 300)}
        <label>
          MCP tools
          <select value={values.mcp_tools} onChange={(e) => setValues({ ...values, mcp_tools: e.target.value as "full" | "core" })}>
            <option value="full">full</option>
            <option value="core">core</option>
          </select>
        </label>
      </div>
      <ErrorBanner error={save.error} />
      <div className="actions">
        <button type="submit" className="primary" disabled={save.pending}>
          Save defaults
        </button>
      </div>
    </form>
  )
}
