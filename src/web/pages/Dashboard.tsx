import { useMemo } from "react"
import { HourlyChart } from "../components/HourlyChart"
import { Meter } from "../components/Meter"
import { Link } from "../components/Link"
import { Empty, Loaded } from "../components/States"
import { useApi } from "../client/useApi"
import { hourlySeries } from "../charts"
import { formatTime } from "../format"

const HOURS = 24

export const DashboardPage = () => {
  const [health, reloadHealth] = useApi((client) => client.connectionHealth.list({ urlParams: {} }))
  const [stats, reloadStats] = useApi((client) => client.audit.stats({ urlParams: { hours: HOURS } }))
  const [refusals, reloadRefusals] = useApi((client) => client.audit.list({ urlParams: { outcome: "refused", limit: 10 } }))
  const series = useMemo(() => (stats.state === "ready" ? hourlySeries(stats.value.hourly, stats.value.since, Date.now() / 1000) : []), [stats])
  return (
    <section aria-labelledby="dashboard-title">
      <h1 id="dashboard-title">Dashboard</h1>
      <div className="dashboard">
        <div className="card">
          <h2>Connections</h2>
          <Loaded value={health} what="connection health" onRetry={reloadHealth}>
            {({ items }) =>
              items.length === 0 ? (
                <Empty>
                  No connections yet. <Link to="/connections">Add one</Link> to run governed queries.
                </Empty>
              ) : (
                <ul className="tiles" aria-label="Connection health">
                  {items.map((h) => (
                    <li key={h.name}>
                      <span className={`dot dot-${h.status}`} role="img" aria-label={`health: ${h.status}`} /> <strong>{h.name}</strong>
                      <div className="muted small">
                        {h.db_type} · {h.status}
                        {h.p50_ms !== null && ` · p50 ${Math.round(h.p50_ms)} ms`}
                      </div>
                      {h.last_error !== null && <div className="bad small">{h.last_error.message}</div>}
                    </li>
                  ))}
                </ul>
              )
            }
          </Loaded>
        </div>
        <div className="card">
          <h2>Requests per hour, last {HOURS} h</h2>
          <Loaded value={stats} what="request statistics" onRetry={reloadStats}>
            {(s) => (
              <>
                <p className="small" role="status">
                  {s.total} requests: {s.success} allowed, <span className="bad">{s.refused} blocked</span>, {s.error} failed
                </p>
                <HourlyChart series={series} />
              </>
            )}
          </Loaded>
        </div>
        <div className="card">
          <h2>Top keys, last {HOURS} h</h2>
          <Loaded value={stats} what="top keys" onRetry={reloadStats}>
            {({ top_keys }) =>
              top_keys.length === 0 ? (
                <Empty>No keyed requests yet.</Empty>
              ) : (
                <div className="scroll-x">
                  <table aria-label="Top keys">
                    <tbody>
                      {top_keys.map((k) => (
                        <tr key={k.key_id}>
                          <th scope="row">{k.principal ?? k.key_id}</th>
                          <td className="grow-cell">
                            <Meter value={k.requests} max={top_keys[0]!.requests} label={`${k.principal ?? k.key_id}: ${k.requests} requests`} />
                          </td>
                          <td>{k.requests}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )
            }
          </Loaded>
        </div>
        <div className="card">
          <h2>Recent refusals</h2>
          <Loaded value={refusals} what="refusals" onRetry={reloadRefusals}>
            {({ items }) =>
              items.length === 0 ? (
                <Empty>Nothing refused.</Empty>
              ) : (
                <ul className="refusals">
                  {items.map((r) => (
                    <li key={r.id}>
                      <span className="muted small">{formatTime(r.timestamp)}</span> <code className="code-tag">{r.block_reason ?? `${r.status ?? ""} ${r.route}`}</code>{" "}
                      {r.connection !== null && <span className="small">on {r.connection}</span>}
                      {r.sql !== null && <div className="sql small">{r.sql}</div>}
                    </li>
                  ))}
                </ul>
              )
            }
          </Loaded>
        </div>
      </div>
    </section>
  )
}
