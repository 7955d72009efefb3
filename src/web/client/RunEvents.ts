/** One event of an agent run as the gateway streams it. */
export interface RunEvent {
  readonly seq: number
  readonly type: string
  readonly data: Record<string, unknown>
  readonly created_at: string
}

/** A piece of the text the model is writing, as it streams (not kept: a follower that joins late sees the turn's text in its model_call event). */
export interface RunTextDelta {
  readonly turn: number
  readonly offset: number
  readonly text: string
}

/** A turn's text with `delta` put in: a piece at offset 0 starts it again (the model call was retried). */
export const withDelta = (text: string, delta: RunTextDelta) => text.slice(0, delta.offset) + delta.text

const END_EVENTS: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"])
const RECONNECT_MS = 1_000

/**
 * Follows a run's events as server-sent events read through fetch (EventSource cannot send the
 * key in a header), from the start, resuming with Last-Event-ID when the connection drops, until
 * the run's end or `stop()`; the model's text as it streams goes to `onText`.
 */
export const followRun = (key: string, path: string, onEvent: (event: RunEvent) => void, onText: (delta: RunTextDelta) => void = () => {}): (() => void) => {
  const abort = new AbortController()
  let last = 0
  const readOnce = async () => {
    const response = await fetch(path, {
      headers: { authorization: `Bearer ${key}`, accept: "text/event-stream", "last-event-id": String(last) },
      signal: abort.signal
    })
    if (!response.ok || response.body === null) return "gone" as const
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    let buffered = ""
    for (;;) {
      const { value, done } = await reader.read()
      // The gateway ends the stream only with the run; a dropped connection fails the read instead.
      if (done) return "ended" as const
      buffered += value
      let boundary = buffered.indexOf("\n\n")
      while (boundary >= 0) {
        const block = buffered.slice(0, boundary)
        buffered = buffered.slice(boundary + 2)
        boundary = buffered.indexOf("\n\n")
        const data = block.split("\n").find((line) => line.startsWith("data: "))
        if (data === undefined || block.startsWith("event: error")) continue
        if (block.startsWith("event: text_delta")) {
          onText(JSON.parse(data.slice(6)) as RunTextDelta)
          continue
        }
        const event = JSON.parse(data.slice(6)) as RunEvent
        last = event.seq
        onEvent(event)
        if (END_EVENTS.has(event.type)) return "ended" as const
      }
    }
  }
  const loop = async () => {
    while (!abort.signal.aborted) {
      const outcome = await readOnce().catch(() => "dropped" as const)
      if (outcome !== "dropped" || abort.signal.aborted) return
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS))
    }
  }
  void loop()
  return () => abort.abort()
}
