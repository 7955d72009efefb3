import { Schema } from "effect"
import { noNul } from "./Text"

export const StartNotebookSession = Schema.Struct({
  connection_name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200), noNul("connection_name")))
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type StartNotebookSession = typeof StartNotebookSession.Type

export const NotebookSessionStatus = Schema.Literal("starting", "running", "stopped", "error")

export const NotebookSession = Schema.Struct({
  id: Schema.String,
  status: NotebookSessionStatus,
  /** Where the notebook UI is: the gateway's proxy, on the notebook origin. */
  url: Schema.String,
  /** On a start's answer: `url` for a browser, by a one-time link (valid a minute) that signs the browser in to this session alone. */
  open_url: Schema.optional(Schema.String),
  connection_name: Schema.NullOr(Schema.String),
  /** An active session was there already: it is the one returned. */
  reused: Schema.Boolean,
  idle_timeout_seconds: Schema.Int,
  /** When it ends if nothing uses it before. */
  idle_deadline: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  last_activity_at: Schema.String
})
export type NotebookSession = typeof NotebookSession.Type
