import { Fragment, useMemo } from "react"
import type { AccuracyRecord } from "../../domain/EvalAccuracy"
import type { EvalCoverage } from "../../domain/EvalCoverage"
import { useApi } from "../client/useApi"
import { Empty, Loaded } from "../components/States"
import { TableHead } from "../components/TableHead"
import { formatTime } from "../format"

const HEIGHT = 100
const points = (value: number | null) => (value === null ? "—" : `${Math.round(value * 10) / 10} %`)
const layerFigure = (coverage: EvalCoverage | null, layer: "overall" | "staging" | "intermediate" | "marts") =>
  coverage === null ? "—" : `${points(coverage[layer].percent)} (${coverage[layer].covered}/${coverage[layer].total})`

/** One eval set at one build fingerprint: its runs' accuracy over time as bars, regressions in red; each bar names its figures. */
const Trend = ({ records }: { readonly records: ReadonlyArray<AccuracyRecord> }) => {
  const oldestFirst = [...records].reverse()
  // Room for 30 runs at least: a few runs are a few bars, not one bar across the page.
  const width = Math.max(oldestFirst.length, 30) * 12
  const regressions = records.filter((record) => record.regressed).length
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${HEIGHT}`} preserveAspectRatio="none" role="img" aria-label={`Accuracy of ${records.length} runs, ${regressions} regression(s)`}>
        {oldestFirst.map((record, i) => {
          const height = ((record.accuracy ?? 0) * HEIGHT) || 1
          return (
            <g key={record.run_id}>
              <title>{`${formatTime(record.finished_at)}: ${points(record.accuracy === null ? null : record.accuracy * 100)}${record.regressed ? " — regression" : ""}, marts coverage ${layerFigure(record.coverage, "marts")}`}</title>
              <rect className={record.regressed ? "bar-bad" : "bar-ok"} x={i * 12 + 1} y={HEIGHT - height} width={10} height={height} />
            </g>
          )
        })}
      </svg>
      <figcaption className="legend small">
        <span>
          <span className="swatch bar-ok" aria-hidden="true" /> accuracy
        </span>
        <span>
          <span className="swatch bar-bad" aria-hidden="true" /> regression
        </span>
      </figcaption>
    </figure>
  )
}

/** A regression: what it dropped from, what changed since, the tasks that flipped and were already flaky, and the run's coverage by layer. */
const Regression = ({ record }: { readonly record: AccuracyRecord }) => {
  const comparison = record.comparison!
  const broke = comparison.flipped.filter((task) => task.change === "broke").map((task) => task.task_id)
  const fixed = comparison.flipped.filter((task) => task.change === "fixed").map((task) => task.task_id)
  return (
    <article aria-label={`Regression of ${record.run_id}`} className="card">
      <h3>
        {record.eval_set_ref}: {points(comparison.accuracy)}, {Math.round(comparison.drop * 10) / 10} points below {points(comparison.baseline)}
      </h3>
      <p className="muted small">
        {formatTime(record.finished_at)} · run {record.run_id} · {record.trigger} · {comparison.regression === "drop_over_threshold" ? "over the threshold" : "a significant drop"} · McNemar p{" "}
        {comparison.mcnemar_p.toPrecision(2)}
      </p>
      <dl className="facts">
        <dt>What changed</dt>
        <dd>
          {record.changes.length === 0 ? (
            "Nothing since the last comparable run"
          ) : (
            <ul>
              {record.changes.map((change) => (
                <li key={`${change.kind}${change.detail}`}>
                  {change.kind.replaceAll("_", " ")}: {change.detail}
                </li>
              ))}
            </ul>
          )}
        </dd>
        <dt>Tasks that broke</dt>
        <dd>{broke.length === 0 ? "none" : broke.join(", ")}</dd>
        <dt>Tasks that were fixed</dt>
        <dd>{fixed.length === 0 ? "none" : fixed.join(", ")}</dd>
        <dt>Flaky tasks</dt>
        <dd>{comparison.flaky.length === 0 ? "none" : comparison.flaky.join(", ")}</dd>
        <dt>Coverage</dt>
        <dd>
          {record.coverage === null
            ? "— (the set names no dbt project)"
            : `staging ${layerFigure(record.coverage, "staging")}, intermediate ${layerFigure(record.coverage, "intermediate")}, marts ${layerFigure(record.coverage, "marts")}`}
        </dd>
      </dl>
    </article>
  )
}

/** Accuracy over time per eval set and build fingerprint, with the regressions detected and what changed. */
export const AccuracyPage = () => {
  const [history, reload] = useApi((client) => client.evals.accuracy({ urlParams: { limit: 500 } }))
  const groups = useMemo(() => {
    if (history.state !== "ready") return []
    const byKey = new Map<string, Array<AccuracyRecord>>()
    for (const record of history.value.items) {
      const key = `${record.eval_set_ref} · ${record.build_fingerprint.slice(0, 19)}`
      byKey.set(key, [...(byKey.get(key) ?? []), record])
    }
    return [...byKey]
  }, [history])
  return (
    <section aria-labelledby="accuracy-title">
      <h1 id="accuracy-title">Accuracy</h1>
      <p className="muted">
        Every completed evaluation run, by eval set and build fingerprint: its accuracy, its coverage of the dbt project (the chart's marts, the run's overall), and the regressions detected against the
        median of the comparable runs before it.
      </p>
      <Loaded value={history} what="the accuracy history" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No completed runs yet.</Empty>
          ) : (
            <>
              <section aria-label="Regressions">
                <h2>Regressions</h2>
                {page.regressions.length === 0 ? <p className="muted">None detected.</p> : page.regressions.map((record) => <Regression key={record.run_id} record={record} />)}
              </section>
              {groups.map(([key, records]) => (
                <section key={key} aria-label={`Accuracy of ${key}`}>
                  <h2 className="clip">{key}</h2>
                  <Trend records={records} />
                  <div className="scroll-x">
                    <table aria-label={`Runs of ${key}`}>
                      <TableHead columns={["Finished", "Run", "Trigger", "Accuracy", "Drop", "Marts coverage", "Coverage", "Regression"]} />
                      <tbody>
                        {records.map((record) => (
                          <Fragment key={record.run_id}>
                            <tr>
                              <td>{formatTime(record.finished_at)}</td>
                              <td className="clip">{record.run_id}</td>
                              <td>{record.trigger}</td>
                              <td>{points(record.accuracy === null ? null : record.accuracy * 100)}</td>
                              <td>{record.comparison === null ? "—" : `${Math.round(record.comparison.drop * 10) / 10}`}</td>
                              <td>{layerFigure(record.coverage, "marts")}</td>
                              <td>{layerFigure(record.coverage, "overall")}</td>
                              <td>{record.regressed ? <span className="verdict wrong">regression</span> : ""}</td>
                            </tr>
                          </Fragment>
                        ))}
                      </tbody>
                    </table>
                  </div>
                </section>
              ))}
            </>
          )
        }
      </Loaded>
    </section>
  )
}
