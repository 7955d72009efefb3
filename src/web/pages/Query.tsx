import { useState } from "react"
import type { QueryResponse } from "../../domain/Query"
import { ResultGrid } from "../components/ResultGrid"
import { SqlEditor } from "../components/SqlEditor"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { useAction, useApi } from "../client/useApi"

export const QueryPage = () => {
  const [connections, reload] = useApi((client) => client.connections.list({ urlParams: {} }))
  const [connection, setConnection] = useState("")
  const [sql, setSql] = useState("select 1")
  const [rowLimit, setRowLimit] = useState(1000)
  const [result, setResult] = useState<QueryResponse | null>(null)
  const query = useAction()
  const chosen = connection !== "" ? connection : connections.state === "ready" ? (connections.value.items[0]?.name ?? "") : ""
  const runQuery = async () => {
    if (chosen === "" || query.pending) return
    setResult(null)
    const answer = await query.perform((client) => client.query.run({ payload: { connection_name: chosen, sql, row_limit: rowLimit } }))
    if (answer !== undefined) setResult(answer)
  }
  return (
    <section aria-labelledby="query-title" className="query">
      <h1 id="query-title">Query</h1>
      <Loaded value={connections} what="connections" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>Add a connection first.</Empty>
          ) : (
            <>
              <div className="row">
                <label>
                  Connection
                  <select value={chosen} onChange={(e) => setConnection(e.target.value)}>
                    {page.items.map((c) => (
                      <option key={c.name} value={c.name}>
                        {c.name} ({c.db_type})
                      </option>
                    ))}
                  </select>
                </label>
                <label>
                  Row limit
                  <input type="number" min={1} max={100000} value={rowLimit} onChange={(e) => setRowLimit(Number(e.target.value) || 1)} />
                </label>
                <button type="button" className="primary" onClick={runQuery} disabled={query.pending} title="Ctrl/Cmd+Enter">
                  {query.pending ? "Running…" : "Run"}
                </button>
              </div>
              <SqlEditor value={sql} onChange={setSql} onRun={runQuery} />
            </>
          )
        }
      </Loaded>
      {query.error !== null && (
        <div className="refusal" role="alert">
          <strong>{query.error.code === "query_blocked" ? "Refused" : "Failed"}:</strong> {query.error.message} <code className="code-tag">{query.error.code}</code>
        </div>
      )}
      {result !== null && <QueryResult result={result} />}
    </section>
  )
}

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
    {result.columns.length === 0 ? <ErrorBanner error={null} /> : <ResultGrid columns={result.columns} rows={result.rows} masked={new Map(result.pii_masked.map((m) => [m.column, m.rule]))} />}
  </div>
)
