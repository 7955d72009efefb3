import { Schema } from "effect"

/** One thing a durable job did, in order by `seq` (an agent run's: a model call, a tool call, a question, a decision, its end). */
export const JobEvent = Schema.Struct({
  seq: Schema.Int,
  type: Schema.String,
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  created_at: Schema.Date
})
export type JobEvent = typeof JobEvent.Type

/** A job's last event is its end, of one of these types: its followers stop there. */
export const END_EVENT_TYPES: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"])

/**
 * A piece of the text a job is writing in its part `turn` (an agent run's model turn), at character
 * `offset` of that part's text, sent to the job's followers as it streams and not kept (an event
 * holds the whole text). Offset 0 starts the part's text again: a call that was retried writes it anew.
 */
export interface TextDelta {
  readonly type: "text_delta"
  readonly turn: number
  readonly offset: number
  readonly text: string
}
