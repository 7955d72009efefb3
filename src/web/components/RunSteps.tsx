import { useEffect, useState } from "react"
import { formatUsd } from "../../domain/Usd"
import { followRun, type RunEvent } from "../client/RunEvents"
import { useSession } from "../client/SessionContext"

const text = (value: unknown) => (typeof value === "string" ? value : "")
const usd = (value: unknown) => (typeof value === "number" ? formatUsd(value) : "")

/** One step as a line a person reads: the tool with its SQL, rows and masked columns; a model call with its tokens and time. */
const Step = ({ event }: { readonly event: RunEvent }) => {
  const d = event.data
  switch (event.type) {
    case "tool_call": {
      const masked = Array.isArray(d["pii_masked"]) ? (d["pii_masked"] as Array<{ column?: string }>).map((m) => m.column).join(", ") : ""
      return (
        <li className={d["is_error"] === true ? "step failed" : "step"}>
          <span className="step-kind">{text(d["tool"])}</span>
          {text(d["connection"]) !== "" && <span className="muted small"> on {text(d["connection"])}</span>}
          {text(d["sql"]) !== "" && <pre className="sql-line">{text(d["sql"])}</pre>}
          <span className="muted small">
            {d["is_error"] === true ? "failed" : `${Number(d["rows"] ?? 0)} rows`}
            {masked !== "" && ` · masked: ${masked}`}
            {typeof d["estimated_usd"] === "number" && ` · est. ${usd(d["estimated_usd"])}`} · {Number(d["duration_ms"] ?? 0)} ms
          </span>
        </li>
      )
    }
    case "model_call":
      return (
        <li className="step">
          <span className="step-kind">model</span>{" "}
          <span className="muted small">
            {Number(d["input_tokens"] ?? 0)} in / {Number(d["output_tokens"] ?? 0)} out tokens · {usd(d["cost_usd"])} · {Number(d["duration_ms"] ?? 0)} ms
          </span>
        </li>
      )
    case "approval_requested":
      return (
        <li className="step">
          <span className="step-kind">approval asked</span> <span className="muted small">{text(d["reason"])}</span>
        </li>
      )
    case "approval":
      return (
        <li className="step">
          <span className="step-kind">{d["approved"] === true ? "approved" : "declined"}</span>
        </li>
      )
    case "question":
      return (
        <li className="step">
          <span className="step-kind">asked</span> {text(d["question"])}
        </li>
      )
    case "answer":
      return (
        <li className="step">
          <span className="step-kind">answered</span> {text(d["answer"])}
        </li>
      )
    case "failed":
    case "cancelled":
      return (
        <li className="step failed">
          <span className="step-kind">{event.type}</span> {text(d["message"])}
        </li>
      )
    default:
      return null
  }
}

/** A run's steps as they happen (followed over server-sent events), calling `onEvent` for each so the page can catch up. */
export const RunSteps = ({ path, onEvent }: { readonly path: string; readonly onEvent?: (event: RunEvent) => void }) => {
  const session = useSession()
  const [events, setEvents] = useState<ReadonlyArray<RunEvent>>([])
  useEffect(() => {
    setEvents([])
    return followRun(session.key, path, (event) => {
      setEvents((seen) => (seen.some((e) => e.seq === event.seq) ? seen : [...seen, event]))
      onEvent?.(event)
    })
  }, [session.key, path])
  const shown = events.filter((e) => e.type !== "completed")
  return shown.length === 0 ? null : (
    <ol className="steps" aria-label="Steps">
      {shown.map((event) => (
        <Step key={event.seq} event={event} />
      ))}
    </ol>
  )
}
