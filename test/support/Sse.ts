import * as http from "node:http"

export interface SseEvent {
  readonly id: string | null
  readonly event: string
  readonly data: any
}

/**
 * Follows a server-sent event stream until the server ends it (or the connection breaks, or
 * `close`), as an EventSource would read it: `events` fills as they arrive; `answered` has the
 * response's status and headers, `ended` how it ended; `bytes` counts the body.
 */
export const followSse = (url: string, path: string, key: string, lastEventId?: string) => {
  const events: Array<SseEvent> = []
  const counted = { bytes: 0 }
  let answer: (response: http.IncomingMessage) => void = () => {}
  const answered = new Promise<http.IncomingMessage>((resolve) => (answer = resolve))
  let req: http.ClientRequest | undefined
  const ended = new Promise<{ readonly status: number; readonly broken: boolean }>((resolve) => {
    req = http.get(`${url}${path}`, { headers: { "x-api-key": key, accept: "text/event-stream", ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) } }, (res) => {
      answer(res)
      let buffer = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        counted.bytes += Buffer.byteLength(chunk)
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const fields = block.split("\n").filter((line) => !line.startsWith(":"))
          if (fields.length === 0) continue
          const field = (name: string) => fields.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2) ?? null
          const data = field("data")
          events.push({ id: field("id"), event: field("event") ?? "message", data: data === null ? null : JSON.parse(data) })
        }
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, broken: false }))
      res.on("error", () => resolve({ status: res.statusCode ?? 0, broken: true }))
      res.on("close", () => resolve({ status: res.statusCode ?? 0, broken: !res.complete }))
    })
    req.on("error", () => resolve({ status: 0, broken: true }))
  })
  return { events, ended, answered, counted, close: () => req?.destroy() }
}
