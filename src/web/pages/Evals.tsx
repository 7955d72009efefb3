import { Fragment, useEffect, useState } from "react"
import type { EvalCoverage } from "../../domain/EvalCoverage"
import { useAction, useApi } from "../client/useApi"
import { useSession } from "../client/SessionContext"
import { useOpenRow } from "../components/OpenRow"
import { RunSteps } from "../components/RunSteps"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { TableHead } from "../components/TableHead"
import { formatTime } from "../format"

const ENDED = new Set(["completed", "failed", "cancelled"])
const percent = (value: number | null) => (value === null ? "—" : `${Math.round(value * 1000) / 10} %`)
const coverageText = (coverage: EvalCoverage) =>
  (["overall", "staging", "intermediate", "marts"] as const).map((layer) => `${layer} ${coverage[layer].covered}/${coverage[layer].total}`).join(", ")

/** The agent's steps for a task, and its answer. */
const Transcript = ({ agentRunId, done }: { readonly agentRunId: string; readonly done: boolean }) => {
  const [run, reload] = useApi((client) => client.agentRuns.get({ path: { id: agentRunId } }), [agentRunId, done])
  return (
    <>
      <RunSteps path={`/api/agent-runs/${agentRunId}/events`} answered={done} />
      <Loaded value={run} what="the agent's answer" onRetry={reload}>
        {(agentRun) => (agentRun.answer === null ? null : <p className="answer">{agentRun.answer}</p>)}
      </Loaded>
    </>
  )
}

/** A run's tasks, live while it runs: phase, verdict, checks, and the agent's steps on demand. */
const RunTasks = ({ runId }: { readonly runId: string }) => {
  const [run, reload] = useApi((client) => client.evals.getRun({ path: { id: runId } }), [runId])
  const rows = useOpenRow()
  const running = run.state === "ready" && !ENDED.has(run.value.status)
  useEffect(() => {
    if (!running) return
    const timer = setInterval(reload, 1000)
    return () => clearInterval(timer)
  }, [running, reload])
  return (
    <Loaded value={run} what="the run's tasks" onRetry={reload}>
      {(detail) => (
        <>
        {detail.coverage !== null && (
          <p className="small" aria-label={`Coverage of ${runId}`}>
            Coverage of the dbt project: {coverageText(detail.coverage)}
          </p>
        )}
        <table aria-label={`Tasks of ${runId}`}>
          <TableHead columns={["Task", "Class", "Phase", "Verdict", "Checks", "Detail"]} actions="Transcript" />
          <tbody>
            {detail.tasks.map((task) => (
              <Fragment key={task.task_id}>
                <tr>
                  <td>{task.task_id}</td>
                  <td>{task.class}</td>
                  <td>{task.phase}</td>
                  <td>{task.verdict === null ? "—" : <span className={`verdict ${task.verdict.toLowerCase()}`}>{task.verdict}</span>}</td>
                  <td>
                    {task.checks.map((check) => (
                      <div key={check.name} className="small">
                        {check.passed ? "✓" : "✗"} {check.name}: {check.detail}
                      </div>
                    ))}
                  </td>
                  <td className="clip">{task.detail ?? ""}</td>
                  <td>
                    {task.agent_run_id !== null && rows.toggle(task.task_id, "Show transcript", "Hide transcript")}
                  </td>
                </tr>
                {task.agent_run_id !== null && rows.detail(task.task_id, 7, () => <Transcript agentRunId={task.agent_run_id!} done={task.phase === "done"} />)}
              </Fragment>
            ))}
          </tbody>
        </table>
        </>
      )}
    </Loaded>
  )
}

/** Evaluation runs for platform staff: the settings they run with, the runs, each run's tasks live, and the export. */
export const EvalsPage = () => {
  const session = useSession()
  const [config, reloadConfig] = useApi((client) => client.evals.getConfig())
  const [runs, reload] = useApi((client) => client.evals.listRuns({ urlParams: { limit: 50 } }))
  const starting = useAction()
  const rows = useOpenRow()
  const [exportError, setExportError] = useState<string | null>(null)
  const anyRunning = runs.state === "ready" && runs.value.items.some((run) => !ENDED.has(run.status))
  useEffect(() => {
    if (!anyRunning) return
    const timer = setInterval(reload, 2000)
    return () => clearInterval(timer)
  }, [anyRunning, reload])

  const start = async () => {
    const run = await starting.perform((client) => client.evals.startRun({ payload: { trigger: "manual" } }))
    if (run === undefined) return
    reload()
    rows.show(run.id)
  }
  // The zip is binary: fetched as bytes with this tab's key, then saved.
  const download = async (runId: string) => {
    setExportError(null)
    const response = await fetch(`/api/evals/runs/${runId}/export`, { headers: { authorization: `Bearer ${session.key}` } }).catch(() => null)
    if (response === null || !response.ok) return setExportError(`The export of ${runId} failed${response === null ? "" : ` (${response.status})`}`)
    const link = document.createElement("a")
    link.href = URL.createObjectURL(await response.blob())
    link.download = `${runId}.zip`
    link.click()
    setTimeout(() => URL.revokeObjectURL(link.href), 1000)
  }

  return (
    <section aria-labelledby="evals-title">
      <h1 id="evals-title">Evaluations</h1>
      <p className="muted">
        Runs of an eval set's tasks with the built-in agent against the pinned connection, each graded by its checks from stored evidence. For platform staff of allow-listed organizations.
      </p>
      <Loaded value={config} what="the evaluation settings" onRetry={reloadConfig}>
        {(settings) => (
          <dl className="facts" aria-label="Evaluation settings">
            <dt>Connection</dt>
            <dd>{settings.connection_name ?? "— (set one with PUT /api/evals/config)"}</dd>
            <dt>Eval set</dt>
            <dd>{settings.eval_set === null ? "—" : settings.eval_set.kind === "upload" ? `upload ${settings.eval_set.upload_id}` : `${settings.eval_set.kind === "remote" ? `${settings.eval_set.url} ` : ""}${settings.eval_set.path} @ ${settings.eval_set.ref ?? "default branch"}`}</dd>
            <dt>Runner profile</dt>
            <dd>{settings.runner_profile ?? "—"}</dd>
            <dt>Tasks per run</dt>
            <dd>{settings.max_tasks}</dd>
          </dl>
        )}
      </Loaded>
      <p>
        <button type="button" onClick={start} disabled={starting.pending}>
          Start a run
        </button>
      </p>
      <ErrorBanner error={starting.error} />
      {exportError !== null && <p role="alert">{exportError}</p>}
      <Loaded value={runs} what="evaluation runs" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No runs yet.</Empty>
          ) : (
            <div className="scroll-x">
              <table aria-label="Evaluation runs">
                <TableHead columns={["Started", "Status", "Trigger", "Eval set", "Tasks done", "Correct / partial / wrong / error", "Accuracy"]} actions="Run" />
                <tbody>
                  {page.items.map((run) => (
                    <Fragment key={run.id}>
                      <tr>
                        <td>{formatTime(run.created_at)}</td>
                        <td>
                          <span className={`run-status ${run.status}`}>{run.status}</span>
                          {run.error !== null && <div className="muted small">{run.error.message}</div>}
                        </td>
                        <td>{run.trigger.replaceAll("_", " ")}</td>
                        <td className="clip" title={run.build_fingerprint}>
                          {run.eval_set_ref}
                        </td>
                        <td>
                          {run.done} / {run.total}
                        </td>
                        <td>
                          {run.verdicts.CORRECT} / {run.verdicts.PARTIAL} / {run.verdicts.WRONG} / {run.verdicts.ERROR}
                        </td>
                        <td>{percent(run.accuracy)}</td>
                        <td>
                          {rows.toggle(run.id, "Show tasks", "Hide tasks")}{" "}
                          <button type="button" className="link" onClick={() => download(run.id)}>
                            Export
                          </button>
                        </td>
                      </tr>
                      {rows.detail(run.id, 8, () => <RunTasks runId={run.id} />)}
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
