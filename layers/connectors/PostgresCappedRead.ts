import type pg from "pg"
import { serialize } from "pg-protocol"
import type { ByteMeter } from "./Connector"

interface Wire {
  readonly stream: {
    write(bytes: Buffer): boolean
    on(event: "data", listener: (chunk: Buffer) => void): void
    off(event: "data", listener: (chunk: Buffer) => void): void
    destroy(): void
  }
  sendCopyFail(message: string): void
}

const NO_VALUES = serialize.bind({ values: [] })
const DESCRIBE_PORTAL = serialize.describe({ type: "P", name: "" })
const SYNC = serialize.sync()
// Parse, Bind, Execute of each step, by the steps' text: a connector's few preambles (they differ by timeout) and its epilogue.
const STEP_BYTES_KEPT = 256
const stepBytes = new Map<string, Buffer>()
const stepsBytes = (steps: ReadonlyArray<string>): Buffer => {
  const key = steps.join("\u0000")
  let bytes = stepBytes.get(key)
  if (bytes === undefined) {
    bytes = Buffer.concat(steps.flatMap((text) => [serialize.parse({ text }), NO_VALUES, serialize.execute({ portal: "", rows: 0 })]))
    if (stepBytes.size >= STEP_BYTES_KEPT) stepBytes.clear()
    stepBytes.set(key, bytes)
  }
  return bytes
}

/**
 * The session's preamble and one statement in one round trip of the extended protocol (so the
 * statement is never two): Parse, Bind, Execute of each preamble step, then Parse, Bind, Describe,
 * Execute of at most `limit` rows, and one Sync. After an error the server skips every message up to
 * the Sync, so the statement never runs unless each preamble step (BEGIN READ ONLY, its limits)
 * succeeded. The row count caps what is read whatever the SQL says; a PortalSuspended answer says
 * rows were left over. The `epilogue` (the session reset) follows the statement in the same round
 * trip; it too runs only if everything before it succeeded, and `epilogueDone` says it did. (pg-cursor takes two round trips and a setImmediate for the same small
 * result; it is kept for streaming.)
 *
 * Once the meter refuses a row the read stops: the driver buffers a whole message before it parses
 * it, so the size of each DataRow is taken from its header as the bytes arrive and metered, and the
 * socket is closed (`oversized`; the caller cancels the statement and discards the client) before a
 * huge row is held.
 */
export class PostgresCappedRead implements pg.Submittable {
  fields: ReadonlyArray<pg.FieldDef> = []
  readonly rows: Array<Array<unknown>> = []
  /** The statement had more rows than `limit`. */
  more = false
  /** The meter stopped the reading; the client's socket is closed. */
  oversized = false
  /** Every epilogue step completed: the session is back in its default state. */
  epilogueDone = false
  /** The statement's command tag ("INSERT 0 2", "SELECT 5"), once it completed. */
  command: string | undefined = undefined
  // Preamble steps, the statement and epilogue steps each end with one completion, in order.
  private completions = 0
  private parsers: ReadonlyArray<(value: string) => unknown> = []
  private finished = false
  private wire: Wire | undefined
  // Where the byte meter is in the message stream: header bytes seen so far, body bytes still to skip.
  private header = Buffer.alloc(5)
  private headerSeen = 0
  private skip = 0

  constructor(
    private readonly preamble: ReadonlyArray<string>,
    private readonly epilogue: ReadonlyArray<string>,
    private readonly text: string,
    private readonly limit: number,
    private readonly types: pg.CustomTypesConfig,
    private readonly done: (error: unknown, read: PostgresCappedRead) => void,
    private readonly byteMeter?: ByteMeter
  ) {}

  submit(connection: pg.Connection) {
    const wire = connection as unknown as Wire
    // Attached after the driver's own listener: a RowDescription in a chunk is parsed before its DataRows are counted here.
    if (this.byteMeter !== undefined) {
      this.wire = wire
      wire.stream.on("data", this.meter)
    }
    // One buffer, one write: the steps around the statement are the same call after call, so their bytes are made once.
    wire.stream.write(
      Buffer.concat([
        stepsBytes(this.preamble),
        serialize.parse({ text: this.text }),
        NO_VALUES,
        DESCRIBE_PORTAL,
        serialize.execute({ portal: "", rows: this.limit }),
        stepsBytes(this.epilogue),
        SYNC
      ])
    )
  }

  handleRowDescription(message: { fields: ReadonlyArray<pg.FieldDef> }) {
    this.fields = message.fields
    this.parsers = message.fields.map((f) => this.types.getTypeParser(f.dataTypeID, f.format as "text"))
  }

  handleDataRow(message: { fields: ReadonlyArray<string | null> }) {
    // An epilogue step's row (pg_advisory_unlock_all's) is not the statement's.
    if (this.completions > this.preamble.length) return
    const parsers = this.parsers
    this.rows.push(message.fields.map((value, i) => (value === null ? null : parsers[i]!(value))))
  }

  handlePortalSuspended() {
    this.more = true
    this.completed()
  }

  handleCommandComplete(message: { text?: string }) {
    if (this.completions === this.preamble.length) this.command = message.text ?? ""
    this.completed()
  }

  handleEmptyQuery() {
    this.completed()
  }

  private completed() {
    this.completions++
    if (this.completions === this.preamble.length + 1 + this.epilogue.length && this.epilogue.length > 0) this.epilogueDone = true
  }

  // The client forgets a query once it has failed: no ReadyForQuery reaches it after an error.
  handleError(error: unknown) {
    // A failed epilogue leaves the statement's result whole; without epilogueDone the session is reset again on release.
    this.finish(this.completions > this.preamble.length ? undefined : error)
  }

  handleReadyForQuery() {
    this.finish(undefined)
  }

  handleCopyInResponse(connection: pg.Connection) {
    ;(connection as unknown as Wire).sendCopyFail("COPY is not allowed")
  }

  handleCopyData() {}

  private readonly meter = (chunk: Buffer) => {
    // The driver's listener runs first and may have finished the read on this very chunk (its ReadyForQuery): the rest is not this read's to meter.
    if (this.finished) return
    let i = 0
    while (i < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - i)
        this.skip -= n
        i += n
        continue
      }
      this.header[this.headerSeen++] = chunk[i++]!
      if (this.headerSeen < 5) continue
      this.headerSeen = 0
      const length = this.header.readInt32BE(1)
      this.skip = length - 4
      // 'D': a DataRow's length covers its own 4 bytes, the column count and each value's 4-byte length.
      if (this.header[0] !== 0x44) continue
      if (!this.byteMeter!.take(Math.max(0, length - 6 - 4 * this.fields.length))) return this.stop()
    }
  }

  private stop() {
    this.oversized = true
    this.wire?.stream.destroy()
    this.finish(undefined)
  }

  private finish(error: unknown) {
    if (this.finished) return
    this.finished = true
    this.wire?.stream.off("data", this.meter)
    this.done(error, this)
  }
}
