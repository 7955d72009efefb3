import { Context, Effect } from "effect"
import Pg from "pg"

/** How long one statement may go unanswered; none while migrations run (an index build may take long). */
export interface StatementDeadline {
  millis: number | undefined
}

type Callback = (...results: Array<unknown>) => void

const ROLLBACK = /^ROLLBACK\b/i

/**
 * A pg client whose every statement has a deadline. Past it the connection is destroyed: the
 * statement (and any transaction it is in) fails, and the pool drops the client instead of lending
 * out a connection that may never answer again. Cursors (no callback) are not bounded; the store reads none.
 */
const clientWithDeadline = (deadline: StatementDeadline) =>
  class DeadlineClient extends Pg.Client {
    private lost = false

    constructor(config?: Pg.ClientConfig) {
      super(config)
      this.on("error", () => (this.lost = true))
    }

    override query(...args: Array<any>): any {
      const run = (): any => Pg.Client.prototype.query.apply(this, args as never)
      const callbackAt = args.findIndex((arg) => typeof arg === "function")
      // The server rolled back the transaction of a connection that is gone: the statement's own error stands, not the rollback's.
      if (this.lost && callbackAt !== -1 && typeof args[0] === "string" && ROLLBACK.test(args[0])) {
        const callback = args[callbackAt] as Callback
        process.nextTick(() => callback(null, { command: "ROLLBACK", rowCount: null, rows: [], fields: [] }))
        return undefined
      }
      const millis = deadline.millis
      if (millis === undefined || (callbackAt === -1 && typeof args[0]?.submit === "function")) return run()
      const timer = setTimeout(() => this.abandon(millis), millis)
      if (callbackAt === -1) return (run() as Promise<unknown>).finally(() => clearTimeout(timer))
      const callback = args[callbackAt] as Callback
      args[callbackAt] = (...results: Array<unknown>) => {
        clearTimeout(timer)
        callback(...results)
      }
      return run()
    }

    private abandon(millis: number) {
      this.lost = true
      const wire = this.connection as unknown as { stream: { destroy: (error: Error) => void } }
      wire.stream.destroy(new Error(`the store did not answer within ${millis / 1000} s`))
    }
  }

/** The store's `pg` pool itself, under the SqlClient: for a hot path that sends a prepared text without the client's per-statement work (the audit writer). */
export class StorePool extends Context.Tag("sluice/StorePool")<StorePool, Pg.Pool>() {}

/** A pool on the store (DATABASE_URL, or the embedded store's socket) whose waits for a connection, connects and statements all end within the deadline. */
export const acquireStorePool = (options: {
  readonly url?: string
  readonly socket?: { readonly dir: string; readonly port: number; readonly user: string; readonly database: string }
  readonly maxConnections: number
  readonly applicationName: string
  readonly deadline: StatementDeadline
  readonly connectMillis: number
}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = new Pg.Pool({
        ...(options.socket === undefined
          ? { connectionString: options.url }
          : { host: options.socket.dir, port: options.socket.port, user: options.socket.user, database: options.socket.database }),
        max: options.maxConnections,
        idleTimeoutMillis: 60_000,
        connectionTimeoutMillis: options.connectMillis,
        application_name: options.applicationName,
        Client: clientWithDeadline(options.deadline)
      })
      // A client's error reaches the statement it fails; an idle client's is the pool's to drop.
      pool.on("error", () => undefined)
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption("1 second"))
  )
