import { SqlClient } from "@effect/sql"
import { Effect, Option, Redacted, Schedule, Stream } from "effect"
import Pg from "pg"
import { AppConfig } from "./AppConfig"

// A lost listening connection is made again, at once and then less often, never less than every 10 s.
const RECONNECT = Schedule.exponential("200 millis").pipe(Schedule.union(Schedule.spaced("10 seconds")))

/** One listening connection to `url` on `channel`, its notifications' payloads as a stream that fails when the connection is lost. */
const listening = (url: string, channel: string, connectMillis: number) =>
  Stream.asyncPush<string, Error>((emit) =>
    Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const client = new Pg.Client({ connectionString: url, application_name: "sluice-listen", connectionTimeoutMillis: connectMillis, keepAlive: true })
          client.on("error", (error) => emit.fail(error))
          client.on("end", () => emit.fail(new Error("the store closed the listening connection")))
          client.on("notification", (message) => message.payload !== undefined && emit.single(message.payload))
          try {
            await client.connect()
            await client.query(`LISTEN ${Pg.escapeIdentifier(channel)}`)
          } catch (cause) {
            client.removeAllListeners("end")
            await client.end().catch(() => undefined)
            throw cause
          }
          return client
        },
        catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause)))
      }),
      (client) =>
        Effect.promise(() => {
          client.removeAllListeners("end")
          return client.end().catch(() => undefined)
        }).pipe(Effect.timeoutOption("1 second"))
    )
  )

/**
 * PostgreSQL's LISTEN/NOTIFY on a shared store: what one process tells the others at once, not
 * kept (a listener that is reconnecting misses it). The embedded store serves one process: there
 * is nobody else to tell.
 */
export class StoreNotifications extends Effect.Service<StoreNotifications>()("sluice/StoreNotifications", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const url = Option.map(config.databaseUrl, Redacted.value)

    /** Every payload sent on `channel` from now on, by any process (this one included), for as long as the stream is read. */
    const listen = (channel: string): Stream.Stream<string> =>
      Option.match(url, {
        onNone: () => Stream.never,
        onSome: (url) =>
          listening(url, channel, config.storeTimeoutSeconds * 1000).pipe(
            Stream.tapError((error) => Effect.logWarning(`store notifications on ${channel} lost; reconnecting`, error.message)),
            Stream.retry(RECONNECT),
            Stream.orDie
          )
      })

    /** Sends `payload` (at most 8000 bytes) on `channel` to every listening process. */
    const notify = (channel: string, payload: string) => (Option.isNone(url) ? Effect.void : Effect.asVoid(sql`select pg_notify(${channel}, ${payload})`))

    return { shared: Option.isSome(url), listen, notify } as const
  })
}) {}
