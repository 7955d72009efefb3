import { Cause, Context, Effect, Exit, Option, Schema, Stream } from "effect"
import { AuditWriter } from "../../layers/AuditWriter"
import type { DbType } from "../domain/Connection"
import type { Unavailable } from "../domain/Errors"
import { decodeCursor, pageOf } from "../domain/Pagination"
import type { Principal } from "../domain/Principal"
import { redactSqlLiterals } from "../governance/RedactSql"
import { type ChangeRecord, PendingChange } from "../repos/ChangeRecord"
import { type AuditInsert, storableAuditRow } from "../repos/AuditInsert"
import { type AuditFilter, AuditRepo, type AuditRow } from "../repos/AuditRepo"

const MAX_BIGINT = 9223372036854775807n
const AuditId = Schema.String.pipe(Schema.pattern(/^\d{1,19}$/), Schema.filter((id) => BigInt(id) <= MAX_BIGINT))
const Cursor = Schema.Tuple(AuditId)

const CSV_COLUMNS = [
  "id", "timestamp", "principal", "key_id", "key_name", "user_id", "event_type", "method", "route", "status", "connection",
  "sql", "outcome", "block_reason", "rows", "duration_ms", "client_ip", "user_agent", "request_id", "details"
] as const

/** Quotes a CSV cell and defuses spreadsheet formulas (cells starting with = + - @, tab or CR). */
export const csvCell = (value: unknown): string => {
  if (value === null || value === undefined) return ""
  let text = typeof value === "object" ? JSON.stringify(value) : String(value)
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

export type { ChangeRecord }

const redacted = (dialect: DbType | null, row: AuditInsert): AuditInsert =>
  row.sql === null ? row : { ...row, sql: redactSqlLiterals(row.sql, dialect) }

/**
 * For a request that may change state: its row (as known so far) is committed with the first change
 * it makes, redacted every dialect's way, and completed by `complete` when it answers.
 */
export const changeRecord = (row: () => AuditInsert): ChangeRecord => ({ row: () => storableAuditRow(redacted(null, row())), state: { _tag: "open" } })

/** `context` with the request's change record, which the store's writes find and commit with their change. */
export const withChangeRecord = <R>(context: Context.Context<R>, record: ChangeRecord) => Context.add(context, PendingChange, record)

/**
 * Closes the record, for its owner to write the final row: the id of the row committed with the
 * change, or null when nothing was committed with it. A change committed from now on writes no row of its own.
 */
export const closeChangeRecord = (record: ChangeRecord): string | null => {
  const written = record.state
  record.state = { _tag: "closed" }
  return written._tag === "written" ? written.id : null
}

const toEntry = ({ org_id: _org, ...entry }: AuditRow) => entry

export class Audit extends Effect.Service<Audit>()("sluice/Audit", {
  effect: Effect.gen(function* () {
    const writer = yield* AuditWriter
    const repo = yield* AuditRepo

    /** Durably records events in one commit; SQL is stored with its string literals redacted as the dialect reads them (every dialect's way when unknown). */
    const record = (dialect: DbType | null, ...rows: ReadonlyArray<AuditInsert>) => writer.write(rows.map((row) => redacted(dialect, row))).pipe(
        // A row the store refuses is our mistake (the writer has logged it), not an outage to wait out.
        Effect.catchTag("StatementRefused", ({ error }) => Effect.die(error))
      )

    /**
     * `record` as plain callbacks, for a request path without a fiber: `done` is told once, when
     * every row is committed or as the first that was not; a row the store refuses (our mistake) is a defect.
     */
    const append = (dialect: DbType | null, rows: ReadonlyArray<AuditInsert>, done: (exit: Exit.Exit<void, Unavailable>) => void) => {
      let storable: ReadonlyArray<AuditInsert>
      try {
        storable = rows.map((row) => redacted(dialect, row))
      } catch (error) {
        return done(Exit.die(error))
      }
      writer.append(storable, (exit) => {
        const refused = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        done(Option.isSome(refused) && refused.value._tag === "StatementRefused" ? Exit.die(refused.value.error) : (exit as Exit.Exit<void, Unavailable>))
      })
    }

    /**
     * Completes the row committed with a change (final status, duration, what it learned), by the id
     * `closeChangeRecord` gave (null: none was, and the row is written as any other), and records the other rows.
     */
    const complete = (id: string | null, dialect: DbType | null, row: AuditInsert, ...others: ReadonlyArray<AuditInsert>) =>
      id === null
        ? record(dialect, row, ...others)
        : repo.complete(id, storableAuditRow(redacted(dialect, row))).pipe(
            // The change's transaction did not commit after all: the row is written as any other.
            Effect.flatMap((completed) => (completed ? record(dialect, ...others) : record(dialect, row, ...others)))
          )

    const list = Effect.fn("Audit.list")(function* (
      principal: Principal,
      filter: AuditFilter,
      page: { limit?: number | undefined; cursor?: string | undefined }
    ) {
      const limit = page.limit ?? 100
      const before = page.cursor === undefined ? null : (yield* decodeCursor(page.cursor, Cursor))[0]
      const rows = yield* repo.page(principal.orgId, filter, before, limit + 1)
      return pageOf(rows.map(toEntry), limit, (entry) => [entry.id])
    })

    const stats = Effect.fn("Audit.stats")(function* (principal: Principal, hours: number) {
      const since = Math.floor(Date.now() / 1000) - hours * 3600
      const s = yield* repo.stats(principal.orgId, since)
      return { since, ...s.totals, hourly: s.hourly, top_keys: s.topKeys, block_reasons: s.blockReasons }
    })

    /** The org's audit rows, newest first, as a byte stream; at most `maxRows`. */
    const exportRows = (principal: Principal, filter: AuditFilter, format: "json" | "csv", maxRows: number) => {
      const rows = repo.exportStream(principal.orgId, filter, maxRows).pipe(Stream.map(toEntry))
      const encoder = new TextEncoder()
      const text =
        format === "csv"
          ? Stream.concat(
              Stream.make(`${CSV_COLUMNS.join(",")}\r\n`),
              rows.pipe(Stream.map((row) => `${CSV_COLUMNS.map((c) => csvCell(row[c as keyof typeof row])).join(",")}\r\n`))
            )
          : Stream.make("[").pipe(
              Stream.concat(rows.pipe(Stream.zipWithIndex, Stream.map(([row, i]) => `${i === 0 ? "\n" : ",\n"}${JSON.stringify(row)}`))),
              Stream.concat(Stream.make("\n]\n"))
            )
      return text.pipe(Stream.map((chunk) => encoder.encode(chunk)))
    }

    return { record, append, complete, list, stats, exportRows } as const
  }),
  dependencies: [AuditWriter.Default, AuditRepo.Default]
}) {}
