import { useEffect, useState } from "react"
import { formatUsd } from "../../domain/Usd"
import { followRun, type RunEvent, withDelta } from "../client/RunEvents"
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
          {/* What the model said on its way to a tool; its last turn's text is the answer, shown below the steps. */}
          {Array.isArray(d["tool_calls"]) && d["tool_calls"].length > 0 && text(d["text"]) !== "" && <p className="small">{text(d["text"])}</p>}
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

/**
 * A run's steps as they happen (followed over server-sent events), calling `onEvent` for each so
 * the page can catch up, and the model's text as it writes it until the run's answer is shown.
 */
export const RunSteps = ({ path, answered, onEvent }: { readonly path: string; readonly answered: boolean; readonly onEvent?: (event: RunEvent) => void }) => {
  const session = useSession()
  const [events, setEvents] = useState<ReadonlyArray<RunEvent>>([])
  const [writing, setWriting] = useState<{ readonly turn: number; readonly text: string } | null>(null)
  useEffect(() => {
    setEvents([])
    setWriting(null)
    return followRun(
      session.key,
      path,
      (event) => {
        setEvents((seen) => (seen.some((e) => e.seq === event.seq) ? seen : [...seen, event]))
        // A turn that went on to a tool is a step now; the last one stays until the answer replaces it.
        if (event.type === "model_call" && Array.isArray(event.data["tool_calls"]) && event.data["tool_calls"].length > 0) setWriting(null)
        onEvent?.(event)
      },
      (delta) => setWriting((current) => ({ turn: delta.turn, text: withDelta(current?.turn === delta.turn ? current.text : "", delta) }))
    )
  }, [session.key, path])
  const shown = events.filter((e) => e.type !== "completed")
  return (
    <>
      {shown.length > 0 && (
        <ol className="steps" aria-label="Steps">
          {shown.map((event) => (
            <Step key={event.seq} event={event} />
          ))}
        </ol>
      )}
      {!answered && writing !== null && (
        <p className="answer writing" aria-live="polite" aria-label="The agent is writing">
          {writing.text}
        </p>
      )}
    </>
  )
}
