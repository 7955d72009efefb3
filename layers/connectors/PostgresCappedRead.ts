import type pg from "pg"

interface Wire {
  readonly stream: { cork?: () => void; uncork?: () => void }
  parse(query: { text: string }): void
  bind(config: { values: Array<never> }): void
  describe(message: { type: "P"; name: string }): void
  execute(config: { portal: string; rows: number }): void
  sync(): void
  sendCopyFail(message: string): void
}

/**
 * The session's preamble and one statement in one round trip of the extended protocol (so the
 * statement is never two): Parse, Bind, Execute of each preamble step, then Parse, Bind, Describe,
 * Execute of at most `limit` rows, and one Sync. After an error the server skips every message up to
 * the Sync, so the statement never runs unless each preamble step (BEGIN READ ONLY, its limits)
 * succeeded. The row count caps what is read whatever the SQL says; a PortalSuspended answer says
 * rows were left over. (pg-cursor takes two round trips and a setImmediate for the same small
 * result; it is kept for streaming.)
 */
export class PostgresCappedRead implements pg.Submittable {
  fields: ReadonlyArray<pg.FieldDef> = []
  readonly rows: Array<Array<unknown>> = []
  /** The statement had more rows than `limit`. */
  more = false
  private parsers: ReadonlyArray<(value: string) => unknown> = []
  private finished = false

  constructor(
    private readonly preamble: ReadonlyArray<string>,
    private readonly text: string,
    private readonly limit: number,
    private readonly types: pg.CustomTypesConfig,
    private readonly done: (error: unknown, read: PostgresCappedRead) => void
  ) {}

  submit(connection: pg.Connection) {
    const wire = connection as unknown as Wire
    wire.stream.cork?.()
    for (const step of this.preamble) {
      wire.parse({ text: step })
      wire.bind({ values: [] })
      wire.execute({ portal: "", rows: 0 })
    }
    wire.parse({ text: this.text })
    wire.bind({ values: [] })
    wire.describe({ type: "P", name: "" })
    wire.execute({ portal: "", rows: this.limit })
    wire.sync()
    wire.stream.uncork?.()
  }

  handleRowDescription(message: { fields: ReadonlyArray<pg.FieldDef> }) {
    this.fields = message.fields
    this.parsers = message.fields.map((f) => this.types.getTypeParser(f.dataTypeID, f.format as "text"))
  }

  handleDataRow(message: { fields: ReadonlyArray<string | null> }) {
    const parsers = this.parsers
    this.rows.push(message.fields.map((value, i) => (value === null ? null : parsers[i]!(value))))
  }

  handlePortalSuspended() {
    this.more = true
  }

  handleCommandComplete() {}
  handleEmptyQuery() {}

  // The client forgets a query once it has failed: no ReadyForQuery reaches it after an error.
  handleError(error: unknown) {
    this.finish(error)
  }

  handleReadyForQuery() {
    this.finish(undefined)
  }

  handleCopyInResponse(connection: pg.Connection) {
    ;(connection as unknown as Wire).sendCopyFail("COPY is not allowed")
  }

  handleCopyData() {}

  private finish(error: unknown) {
    if (this.finished) return
    this.finished = true
    this.done(error, this)
  }
}
