import { Fragment } from "react"
import { formatUsd } from "../../domain/Usd"
import { useApi } from "../client/useApi"
import { useOpenRow } from "../components/OpenRow"
import { RunSteps } from "../components/RunSteps"
import { Empty, Loaded } from "../components/States"
import { TableHead } from "../components/TableHead"
import { formatTime } from "../format"

const STATUS_LABEL: Readonly<Record<string, string>> = {
  queued: "queued",
  running: "running",
  waiting_for_user: "waiting for an answer",
  waiting_for_query_approval: "waiting for approval",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled"
}

/** Every agent run of the organization (chat and API ones): status, model, turns, tokens, cost, and its steps on demand. */
export const AgentRunsPage = () => {
  const [runs, reload] = useApi((client) => client.agentRuns.list({ urlParams: { limit: 100 } }))
  const rows = useOpenRow()
  return (
    <section aria-labelledby="runs-title">
      <h1 id="runs-title">Agent runs</h1>
      <p className="muted">
        Runs of the built-in agent, from the Chat page, <code>POST /api/agent-runs</code> or the <code>run_agent</code> MCP tool. Each is a durable job: it survives a
        restart and runs once.{" "}
        <button type="button" className="link" onClick={reload}>
          Refresh
        </button>
      </p>
      <Loaded value={runs} what="agent runs" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No runs yet. Ask something on the Chat page.</Empty>
          ) : (
            <div className="scroll-x">
              <table>
                <TableHead columns={["Started", "Status", "Question", "Model", "Turns", "Tokens in / out", "Cost"]} actions="Steps" />
                <tbody>
                  {page.items.map((run) => (
                    <Fragment key={run.id}>
                      <tr>
                        <td>{formatTime(run.created_at)}</td>
                        <td>
                          <span className={`run-status ${run.status}`}>{STATUS_LABEL[run.status] ?? run.status}</span>
                          {run.error !== null && <div className="muted small">{run.error.message}</div>}
                        </td>
                        <td className="clip">{run.prompt}</td>
                        <td>{run.model ?? "—"}</td>
                        <td>
                          {run.turns} / {run.max_turns}
                        </td>
                        <td>
                          {run.input_tokens} / {run.output_tokens}
                        </td>
                        <td>{formatUsd(run.cost_usd)}</td>
                        <td>
                          {rows.toggle(run.id, "Show steps", "Hide steps")}
                        </td>
                      </tr>
                      {rows.detail(run.id, 8, () => (
                        <>
                          <RunSteps path={`/api/agent-runs/${run.id}/events`} answered={run.answer !== null} />
                          {run.answer !== null && <p className="answer">{run.answer}</p>}
                        </>
                      ))}
                    </Fragment>
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
