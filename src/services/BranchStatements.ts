import type pg from "pg"
import { Effect, Option } from "effect"
import { ConnectorPools } from "../../layers/connectors/ConnectorPools"
import { PostgresCappedRead } from "../../layers/connectors/PostgresCappedRead"
import { Forbidden, InvalidRequest, Unavailable } from "../domain/Errors"
import { modelKey, type ModelCapture } from "../domain/grading/Grade"
import type { Principal } from "../domain/Principal"
import { classifyDbtSql, READS_AS_CLASSIFIED } from "../governance/sqlguard/DbtStatements"
import { DbBranches } from "./DbBranches"
import { QueryPlanning } from "./Queries"

export const BRANCH_STATEMENT_TIMEOUT_SECONDS = 300
const BRANCH_RESULT_ROWS = 1_000
const BRANCH_RESULT_BYTES = 16_000_000
const MESSAGE_CHARS = 1_000
const shortened = (text: string) => (text.length > MESSAGE_CHARS ? `${text.slice(0, MESSAGE_CHARS)}…` : text)
// Values as the server wrote them: a branch's rows are shown, not computed with.
const VALUES_AS_TEXT: pg.CustomTypesConfig = { getTypeParser: (() => (value: string) => value) as pg.CustomTypesConfig["getTypeParser"] }

/** What a branch statement returned: its last statement's rows (at most 1,000), or what it changed. */
export interface BranchResult {
  readonly command: string
  readonly row_count: number | null
  readonly columns: ReadonlyArray<{ readonly name: string }>
  readonly rows: ReadonlyArray<ReadonlyArray<unknown>>
  readonly truncated: boolean
}

/** What a capture records of a model: its grains and the columns to sum, named as the checks name them. */
export interface ModelWanted {
  readonly model: string
  readonly grains: ReadonlyArray<ReadonlyArray<string>>
  readonly sums: ReadonlyArray<string>
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * SQL in the one database branch a principal may write in (an evaluation write task's key: its
 * task's branch), as the branch's own role, never the connection's: classified as the dbt proxy
 * classifies what it is sent (PostgreSQL's parser; DDL and DML in the branch go on, anything that
 * reaches beyond it is refused before it is sent), with a statement timeout. The branch is a
 * governed copy (blocked tables dropped, PII masked), so what it returns is what the gate allows.
 */
export class BranchStatements extends Effect.Service<BranchStatements>()("sluice/BranchStatements", {
  effect: Effect.gen(function* () {
    const branches = yield* DbBranches
    const pools = yield* ConnectorPools

    /** A session on the principal's branch as its role, ended with the scope. */
    const session = (principal: Principal, timeoutSeconds: number) =>
      Effect.gen(function* () {
        const grant = principal.branch
        if (grant === undefined) return yield* new Forbidden({ message: "This key writes in no database branch" })
        const { branch, branchTarget, password } = yield* branches.upstreamOf(principal.orgId, grant.connection, grant.project, grant.name)
        const opened = yield* pools
          .postgresSession(branchTarget, { database: branch.database, user: branch.owner_role, password, settings: { ...READS_AS_CLASSIFIED, statement_timeout: `${timeoutSeconds}s` } })
          .pipe(Effect.mapError(() => new Unavailable({ message: `The branch ${grant.name} could not be reached` })))
        return { branch, client: opened.client, cancel: opened.cancel }
      })

    // The server's own words: what the statement did wrong, in the branch only; cut short, as a message echoing a value can be any length.
    const refused = (error: unknown) => new InvalidRequest({ message: `The branch refused the statement: ${shortened(error instanceof Error ? error.message : "it failed")}` })
    const attempt = <A>(work: () => Promise<A>) => Effect.tryPromise({ try: work, catch: refused })

    /**
     * One statement read within a budget: at most `rows` rows (one more says there were more) and
     * 16 MB of values, the reading stopped as a row's header says it would go over (before the
     * driver holds it), the session then of no more use; a statement given up is cancelled.
     */
    const readCapped = (opened: { readonly client: pg.Client; readonly cancel: Effect.Effect<void> }, text: string, rows: number) =>
      Effect.async<PostgresCappedRead, InvalidRequest>((resume) => {
        let held = 0
        const meter = { cap: BRANCH_RESULT_BYTES, take: (bytes: number) => (held += bytes) <= BRANCH_RESULT_BYTES }
        opened.client.query(
          new PostgresCappedRead([], [], text, rows + 1, VALUES_AS_TEXT, (error, read) => {
            if (read.oversized) return resume(Effect.zipRight(opened.cancel, Effect.fail(new InvalidRequest({ message: `The statement's result is larger than ${BRANCH_RESULT_BYTES / 1_000_000} MB: select less (fewer rows, shorter values)` }))))
            resume(error === undefined ? Effect.succeed(read) : Effect.fail(refused(error)))
          }, meter)
        )
        return opened.cancel
      })

    const query = <R extends pg.QueryResultRow>(client: pg.Client, config: pg.QueryConfig) => attempt(() => client.query<R>(config))

    /**
     * Runs `sql` (one or more statements) in the principal's branch; the last statement's result is
     * returned. While a tool call is only being planned (its cost estimated), nothing runs: a branch
     * is the caller's own copy, which no estimate prices.
     */
    const run = (principal: Principal, sql: string, timeoutSeconds = BRANCH_STATEMENT_TIMEOUT_SECONDS) =>
      Effect.gen(function* () {
        if (Option.isSome(yield* Effect.serviceOption(QueryPlanning))) return { command: "PLANNED", row_count: null, columns: [], rows: [], truncated: false } satisfies BranchResult
        const opened = yield* session(principal, timeoutSeconds)
        const verdict = classifyDbtSql(sql, opened.branch.database)
        if (!verdict.allowed) return yield* new InvalidRequest({ message: `Refused in the branch: ${verdict.reason}` })
        if (verdict.statements.length === 0) return yield* new InvalidRequest({ message: "There is no statement to run" })
        // One statement at a time, each read within its budget; several are one transaction, as one query's text would be.
        const several = verdict.statements.length > 1
        if (several) yield* attempt(() => opened.client.query("BEGIN"))
        let last: PostgresCappedRead | undefined
        for (const statement of verdict.statements) last = yield* readCapped(opened, statement.sql, BRANCH_RESULT_ROWS)
        if (several) yield* attempt(() => opened.client.query("COMMIT"))
        // A command tag ends with its row count where it has one ("INSERT 0 2", "SELECT 2", "CREATE TABLE").
        const words = (last!.command ?? "").split(" ")
        const count = /^\d+$/.test(words.at(-1) ?? "") ? Number(words.at(-1)) : null
        return {
          command: words.filter((word) => !/^\d+$/.test(word)).join(" "),
          row_count: count,
          columns: last!.fields.map((field) => ({ name: field.name })),
          rows: last!.rows.slice(0, BRANCH_RESULT_ROWS),
          truncated: last!.more || last!.rows.length > BRANCH_RESULT_ROWS
        } satisfies BranchResult
      }).pipe(Effect.scoped)

    /**
     * What the branch holds of each model, by the name grading knows it by: whether it exists, its
     * columns, rows, and the grains and sums its checks read (a grain of a column it lacks, or a sum of
     * one that is not numeric, is left out: its check fails on the missing column).
     */
    const capture = (principal: Principal, wanted: ReadonlyArray<ModelWanted>, rowsPerModel = 0) =>
      Effect.gen(function* () {
        const opened = yield* session(principal, BRANCH_STATEMENT_TIMEOUT_SECONDS)
        const client = opened.client
        const models: Record<string, ModelCapture> = {}
        // Each model's first rows, where asked for (a write task's capture mode): kept with its evidence, never graded.
        const rows: Record<string, { readonly columns: ReadonlyArray<string>; readonly rows: ReadonlyArray<ReadonlyArray<unknown>>; readonly truncated: boolean }> = {}
        for (const { model, grains, sums } of wanted) {
          const found = yield* query<{ rel: string | null; oid: number | null }>(client, { text: "select to_regclass($1)::text as rel, to_regclass($1)::oid::int8 as oid", values: [model] }).pipe(
            Effect.orElseSucceed(() => ({ rows: [{ rel: null, oid: null }] }))
          )
          const { rel, oid } = found.rows[0] ?? { rel: null, oid: null }
          if (rel === null || oid === null) {
            models[modelKey(model)] = { exists: false, row_count: null, columns: [], grains: {}, sums: {} }
            continue
          }
          const attributes = yield* query<{ name: string; type: string; numeric: boolean }>(client, {
            text: `select a.attname as name, pg_catalog.format_type(a.atttypid, a.atttypmod) as type, t.typcategory = 'N' as numeric
              from pg_catalog.pg_attribute a join pg_catalog.pg_type t on t.oid = a.atttypid
              where a.attrelid = $1 and a.attnum > 0 and not a.attisdropped order by a.attnum`,
            values: [oid]
          })
          const byName = new Map(attributes.rows.map((column) => [column.name.toLowerCase(), column]))
          const counted = yield* query<{ n: string }>(client, { text: `select count(*)::text as n from ${rel}` })
          const captured: { grains: Record<string, { duplicates: number; null_keys: number }>; sums: Record<string, number | null> } = { grains: {}, sums: {} }
          for (const grain of grains) {
            const columns = grain.map((name) => byName.get(name.toLowerCase()))
            if (columns.some((column) => column === undefined)) continue
            const keys = columns.map((column) => quoteIdent(column!.name))
            const measured = yield* query<{ duplicates: string; null_keys: string }>(client, {
              text: `select coalesce(sum(n) filter (where n > 1), 0)::text as duplicates, (select count(*) from ${rel} where ${keys.map((k) => `${k} is null`).join(" or ")})::text as null_keys
                from (select count(*) as n from ${rel} group by ${keys.join(", ")}) g`
            })
            captured.grains[grain.join(",")] = { duplicates: Number(measured.rows[0]?.duplicates ?? 0), null_keys: Number(measured.rows[0]?.null_keys ?? 0) }
          }
          for (const name of sums) {
            const column = byName.get(name.toLowerCase())
            if (column === undefined) continue
            if (!column.numeric) {
              captured.sums[name.toLowerCase()] = null
              continue
            }
            const summed = yield* query<{ total: number | null }>(client, { text: `select sum(${quoteIdent(column.name)})::float8 as total from ${rel}` })
            captured.sums[name.toLowerCase()] = summed.rows[0]?.total ?? null
          }
          models[modelKey(model)] = {
            exists: true,
            row_count: Number(counted.rows[0]?.n ?? 0),
            columns: attributes.rows.map((column) => ({ name: column.name, type: column.type })),
            ...captured
          }
          if (rowsPerModel > 0) {
            const read = yield* readCapped(opened, `select * from ${rel}`, rowsPerModel)
            rows[modelKey(model)] = { columns: read.fields.map((field) => field.name), rows: read.rows.slice(0, rowsPerModel), truncated: read.more || read.rows.length > rowsPerModel }
          }
        }
        return { models, rows }
      }).pipe(Effect.scoped)

    return { run, capture } as const
  }),
  dependencies: [DbBranches.Default, ConnectorPools.Default]
}) {}
