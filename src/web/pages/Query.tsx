import { useMemo, useState } from "react"
import type { ExplainResponse as ExplainSchema, QueryResponse } from "../../domain/Query"

type ExplainResponse = typeof ExplainSchema.Type
import { ConnectionPicker, useChosenConnection } from "../components/ConnectionPicker"
import { ResultGrid } from "../components/ResultGrid"
import { SqlEditor } from "../components/SqlEditor"
import { Link } from "../components/Link"
import { Empty, Loaded } from "../components/States"
import type { ApiFailure } from "../client/ApiClient"
import { useAction, useApi } from "../client/useApi"
import { formatTime } from "../format"
import { sqlConfigFor } from "../sqlCompletion"

type Answer = { readonly kind: "result"; readonly result: QueryResponse } | { readonly kind: "plan"; readonly plan: ExplainResponse }

export const QueryPage = () => {
  const { connections, reload, chosen, choose } = useChosenConnection()
  const [sql, setSql] = useState("select 1")
  const [rowLimit, setRowLimit] = useState(1000)
  const [answer, setAnswer] = useState<Answer | null>(null)
  const [ran, setRan] = useState(0)
  const query = useAction()
  const dbType = connections.state === "ready" ? (connections.value.items.find((c) => c.name === chosen)?.db_type ?? "") : ""
  const [scanned] = useApi((client) => client.schema.get({ path: { name: chosen } }), [chosen])
  const config = useMemo(() => sqlConfigFor(dbType, scanned.state === "ready" && chosen !== "" ? scanned.value.tables : []), [dbType, scanned, chosen])
  const payload = { connection_name: chosen, sql, row_limit: rowLimit }
  const runQuery = async () => {
    if (chosen === "" || query.pending) return
    setAnswer(null)
    const result = await query.perform((client) => client.query.run({ payload }))
    if (result !== undefined) setAnswer({ kind: "result", result })
    setRan((n) => n + 1)
  }
  const explain = async () => {
    if (chosen === "" || query.pending) return
    setAnswer(null)
    const plan = await query.perform((client) => client.query.explain({ payload }))
    if (plan !== undefined) setAnswer({ kind: "plan", plan })
  }
  return (
    <section aria-labelledby="query-title" className="query">
      <h1 id="query-title">Query</h1>
      <Loaded value={connections} what="connections" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>
              <Link to="/connections">Add a connection</Link> first.
            </Empty>
          ) : (
            <>
              <div className="row">
                <ConnectionPicker items={page.items} value={chosen} onChange={choose} />
                <label>
                  Row limit
                  <input type="number" min={1} max={100000} value={rowLimit} onChange={(e) => setRowLimit(Number(e.target.value) || 1)} />
                </label>
                <button type="button" className="primary" onClick={runQuery} disabled={query.pending} title="Ctrl/Cmd+Enter">
                  {query.pending ? "Running…" : "Run"}
                </button>
                <button type="button" onClick={explain} disabled={query.pending}>
                  Explain
                </button>
              </div>
              <SqlEditor value={sql} onChange={setSql} onRun={runQuery} config={config} />
            </>
          )
        }
      </Loaded>
      {query.error !== null && <Refusal error={query.error} />}
      {answer?.kind === "result" && <QueryResult result={answer.result} />}
      {answer?.kind === "plan" && <Plan plan={answer.plan} />}
      {chosen !== "" && <History connection={chosen} refresh={ran} onUse={setSql} />}
    </section>
  )
}

const Refusal = ({ error }: { readonly error: ApiFailure }) => (
  <div className="refusal" role="alert">
    <strong>{error.code === "query_blocked" ? "Refused" : "Failed"}:</strong> {error.message} <code className="code-tag">{error.code}</code>
  </div>
)

const QueryResult = ({ result }: { readonly result: QueryResponse }) => (
  <div className="result">
    <p className="meta" role="status">
      {result.row_count} row{result.row_count === 1 ? "" : "s"} in {Math.round(result.execution_ms)} ms
      {result.cached && " · from cache"}
      {result.pii_masked.length > 0 && ` · ${result.pii_masked.length} masked column${result.pii_masked.length === 1 ? "" : "s"}`}
      {result.budget !== null && ` · budget: ${result.budget.remaining.queries ?? "∞"} queries left`}
    </p>
    {result.completeness !== "complete" && (
      <p className="notice">Truncated at {result.truncated_at} rows: raise the row limit or narrow the query to see the rest.</p>
    )}
    {result.columns.length > 0 && <ResultGrid columns={result.columns} rows={result.rows} masked={new Map(result.pii_masked.map((m) => [m.column, m.rule]))} />}
  </div>
)

const Plan = ({ plan }: { readonly plan: ExplainResponse }) => (
  <div className="result" aria-label="Query plan">
    <p className="meta" role="status">
      Plan for {plan.tables.length > 0 ? plan.tables.join(", ") : "the statement"}
      {plan.estimated_rows !== null && ` · ~${plan.estimated_rows.toLocaleString()} rows`}
      {plan.estimated_cost !== null && ` · cost ${plan.estimated_cost.toLocaleString()}`}
      {plan.estimated_bytes !== null && ` · ${plan.estimated_bytes.toLocaleString()} bytes scanned`}
    </p>
    {plan.warnings.map((w) => (
      <p key={w} className="notice">
        {w}
      </p>
    ))}
    <pre className="plan">{typeof plan.plan === "string" ? plan.plan : Array.isArray(plan.plan) && plan.plan.every((l: unknown) => typeof l === "string") ? plan.plan.join("\n") : JSON.stringify(plan.plan, null, 2)}</pre>
  </div>
)

/** This key's recent queries on the connection, from the audit log (literals redacted, as it stores them). */
const History = (props: { readonly connection: string; readonly refresh: number; readonly onUse: (sql: string) => void }) => {
  const [self, reload] = useApi((client) => client.keys.self())
  return (
    <details className="card history" open>
      <summary>
        <h2>Your recent queries</h2>
      </summary>
      <Loaded value={self} what="history" onRetry={reload}>
        {(caller) => <HistoryList {...props} keyId={caller.key_id} />}
      </Loaded>
    </details>
  )
}

const HistoryList = ({ connection, refresh, onUse, keyId }: {
  readonly connection: string
  readonly refresh: number
  readonly onUse: (sql: string) => void
  readonly keyId: string | null
}) => {
  const [history, reload] = useApi(
    (client) => client.audit.list({ urlParams: { event_type: "query", connection, limit: 20, ...(keyId !== null ? { key_id: keyId } : {}) } }),
    [connection, refresh, keyId]
  )
  return (
    <Loaded value={history} what="history" onRetry={reload}>
      {({ items }) =>
        items.length === 0 ? (
          <p className="muted small">No queries on {connection} yet.</p>
        ) : (
          <ul aria-label="Query history">
            {items.map((q) => (
              <li key={q.id} className={`outcome-${q.outcome}`}>
                <button type="button" className="link" disabled={q.sql === null} onClick={() => q.sql !== null && onUse(q.sql)} title="Put this statement in the editor">
                  Use
                </button>{" "}
                <span className="muted small">{formatTime(q.timestamp)}</span>{" "}
                <span className={q.outcome === "success" ? "small" : "small bad"}>
                  {q.outcome}
                  {q.block_reason !== null && ` (${q.block_reason})`}
                </span>{" "}
                <code className="sql">{q.sql}</code>
              </li>
            ))}
          </ul>
        )
      }
    </Loaded>
  )
}
