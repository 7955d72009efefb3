import { Data, Duration, Effect, Schedule, Schema } from "effect"
import { Unavailable } from "../src/domain/Errors"

const REQUEST_TIMEOUT_MS = 30_000
// Far above any page these APIs answer: a larger answer is cut off as it streams, never held whole.
const MAX_ANSWER_BYTES = 8 * 1024 * 1024

class TooLarge extends Error {}

/** The body as text, read until it ends or passes MAX_ANSWER_BYTES (then the stream is cancelled). */
const textOf = async (response: Response) => {
  if (response.body === null) return ""
  const decoder = new TextDecoder()
  const reader = response.body.getReader()
  let read = 0
  let text = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return text + decoder.decode()
    read += value.byteLength
    if (read > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => undefined)
      throw new TooLarge()
    }
    text += decoder.decode(value, { stream: true })
  }
}
// 423: another operation on the same thing is under way; 429: asked too often; 5xx: the service's own trouble. Each is worth a retry.
const RETRIED = new Set([423, 429, 500, 502, 503, 504])

/** The service refused the credentials the request carried (401 or 403). */
export class ServiceRefused extends Data.TaggedError("ServiceRefused")<{ readonly status: number }> {}

export interface JsonRequest {
  readonly method: "GET" | "POST" | "DELETE"
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: unknown
  /** What the request carries that a log line must not: a service that echoes it in an error has it replaced. */
  readonly secrets: ReadonlyArray<string>
}

/**
 * One call to a third party's JSON API: its answer decoded with `reply`, null for 404. No redirect is
 * followed (a credential goes to the address asked and nowhere else); what the service says in an
 * error goes to the log, never to the caller. Busy and failing answers are retried a few times.
 */
export const requestJson = <A, I>(service: string, request: JsonRequest, reply: Schema.Schema<A, I>): Effect.Effect<A | null, ServiceRefused | Unavailable> =>
  Effect.gen(function* () {
    const unreachable = () => new Unavailable({ message: `The ${service} could not be reached; try again later` })
    const response = yield* Effect.tryPromise({
      try: (signal) =>
        fetch(request.url, {
          method: request.method,
          headers: { accept: "application/json", ...request.headers, ...(request.body === undefined ? {} : { "content-type": "application/json" }) },
          ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
          redirect: "error",
          signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)])
        }),
      catch: unreachable
    })
    const text = yield* Effect.tryPromise({
      try: () => textOf(response),
      catch: (error) => (error instanceof TooLarge ? new Unavailable({ message: `The ${service}'s answer was larger than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB; it was cut off` }) : unreachable())
    })
    if (response.status === 404) return null
    if (response.status === 401 || response.status === 403) return yield* new ServiceRefused({ status: response.status })
    if (!response.ok) {
      const where = new URL(request.url).pathname
      const said = request.secrets.reduce((said, secret) => (secret.length === 0 ? said : said.replaceAll(secret, "[redacted]")), text)
      yield* Effect.logWarning(`${service}: ${request.method} ${where} answered ${response.status}: ${said.slice(0, 500)}`)
      const error = new Unavailable({ message: `The ${service} answered ${response.status}; the gateway's log has its message` })
      return yield* RETRIED.has(response.status) ? Effect.fail({ retry: error }) : error
    }
    return yield* Effect.try({ try: () => JSON.parse(text) as unknown, catch: () => null }).pipe(
      Effect.flatMap(Schema.decodeUnknown(reply)),
      Effect.mapError(() => new Unavailable({ message: `The ${service}'s answer was not what its API describes` }))
    )
  }).pipe(
    Effect.retry({ while: (error) => "retry" in error, schedule: Schedule.exponential(Duration.millis(500)).pipe(Schedule.intersect(Schedule.recurs(5))) }),
    Effect.mapError((error) => ("retry" in error ? error.retry : error))
  )
