import { SqlClient, SqlSchema } from "@effect/sql"
import { Chunk, Effect, Option, Schema, Stream } from "effect"
import { AuditEntry } from "../domain/Audit"
import { OrgId } from "../domain/Ids"
import type { AuditInsert } from "./AuditInsert"
import { storeErrors, storeErrorsWithRefusals } from "./StoreErrors"
import { tenantScope } from "./Tenant"

// Every column an audit row writes, in the order of the INSERT's values.
const INSERT_COLUMNS = [
  "timestamp", "org_id", "principal", "key_id", "user_id", "event_type", "method", "route", "status", "connection",
  "sql", "outcome", "block_reason", "rows", "duration_ms", "client_ip", "user_agent", "request_id", "details"
] as const satisfies ReadonlyArray<keyof AuditInsert>
// A column added to AuditInsert and not here fails to compile.
const everyColumn: [Exclude<keyof AuditInsert, (typeof INSERT_COLUMNS)[number]>] extends [never] ? true : never = true
void everyColumn

/** The most rows one INSERT takes: the audit writer's batches are no larger. */
export const MAX_INSERT_ROWS = 500

const AuditRow = Schema.Struct({ ...AuditEntry.fields, org_id: Schema.NullOr(Schema.String) })
export type AuditRow = typeof AuditRow.Type

const AuditFilter = Schema.Struct({
  from: Schema.optional(Schema.Number),
  to: Schema.optional(Schema.Number),
  event_type: Schema.optional(Schema.String),
  connection: Schema.optional(Schema.String),
  key_id: Schema.optional(Schema.String),
  outcome: Schema.optional(Schema.String),
  /** Leaves out plain GET requests to /api; governed reads of rows are other event types and stay. */
  exclude_reads: Schema.optional(Schema.Boolean)
})
export type AuditFilter = typeof AuditFilter.Type

const HourCounts = Schema.Struct({ hour: Schema.Number, success: Schema.Number, refused: Schema.Number, error: Schema.Number })
const KeyRequests = Schema.Struct({ key_id: Schema.String, principal: Schema.NullOr(Schema.String), requests: Schema.Number })
const BlockReasonCount = Schema.Struct({ block_reason: Schema.String, count: Schema.Number })
const StatsWindow = Schema.Struct({
  orgId: OrgId,
  since: Schema.Number,
  firstFullHour: Schema.Number,
  fold: Schema.Struct({ throughId: Schema.String, xmax: Schema.String, xip: Schema.String })
})

const COLUMNS = `gateway_audit_logs.id::text as id, "timestamp"::float8 as "timestamp", gateway_audit_logs.org_id, principal, key_id,
  api_keys.name as key_name, gateway_audit_logs.user_id, event_type, method, route, status, connection, sql, outcome, block_reason, rows,
  duration_ms, client_ip, user_agent, request_id, details`

export class AuditRepo extends Effect.Service<AuditRepo>()("sluice/AuditRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("audit log")

    const columnsOf = (row: AuditInsert) => ({ ...row, details: row.details === null ? null : JSON.stringify(row.details) })

    // Made once per batch size: building the statement through the sql helpers cost a fifth of an insert's CPU (bench/README.md).
    // Kept for the sizes that recur (small groups, and the writer's full batch); the texts of every size up to 500 would hold megabytes.
    const insertTexts = new Map<number, string>()
    const keptSize = (rows: number) => rows <= 32 || rows === MAX_INSERT_ROWS
    const insertText = (rows: number) => {
      let text = insertTexts.get(rows)
      if (text === undefined) {
        const values = Array.from({ length: rows }, (_, r) => `(${INSERT_COLUMNS.map((_, c) => `$${r * INSERT_COLUMNS.length + c + 1}`).join(", ")})`)
        text = `insert into gateway_audit_logs (${INSERT_COLUMNS.map((c) => `"${c}"`).join(", ")}) values ${values.join(", ")}`
        if (keptSize(rows)) insertTexts.set(rows, text)
      }
      return text
    }
    const refusedBatch = storeErrorsWithRefusals("audit log")

    /**
     * One INSERT for a whole group-commit batch, as its text and values: what the audit writer sends on
     * the store's pool itself. A batch size whose text is kept is named, so each session parses it once.
     */
    const insertStatement = (rows: ReadonlyArray<AuditInsert>) => ({
      name: keptSize(rows.length) ? `sluice_audit_insert_${rows.length}` : undefined,
      text: insertText(rows.length),
      values: rows.flatMap((row) => INSERT_COLUMNS.map((column) => (column === "details" ? (row.details === null ? null : JSON.stringify(row.details)) : row[column])))
    })
    /** insertStatement through the SqlClient (inside a transaction, a test's seeding); a batch the store refused fails with StatementRefused. */
    const insertBatch = (rows: ReadonlyArray<AuditInsert>) =>
      refusedBatch(
        Effect.suspend(() => {
          const { text, values } = insertStatement(rows)
          return Effect.asVoid(sql.unsafe(text, values))
        })
      )

    const completeRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, final: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ id, final }) => sql`update gateway_audit_logs set ${sql.update(final)} where id = ${id}::bigint returning id::text as id`
    })
    /** Overwrites a row written before its request answered with the final one; false when no such row was committed. */
    const complete = Effect.fn("AuditRepo.complete")((id: string, row: AuditInsert) => {
      const { timestamp: _written, ...final } = columnsOf(row)
      return completeRow({ id, final }).pipe(Effect.map(Option.isSome))
    }, failures)

    const where = (orgId: string, f: typeof AuditFilter.Encoded, beforeId: string | null) =>
      sql.and([
        sql`gateway_audit_logs.org_id = ${orgId}`,
        ...(f.from !== undefined ? [sql`"timestamp" >= ${f.from}`] : []),
        ...(f.to !== undefined ? [sql`"timestamp" <= ${f.to}`] : []),
        ...(f.event_type !== undefined ? [sql`event_type = ${f.event_type}`] : []),
        ...(f.connection !== undefined ? [sql`connection = ${f.connection}`] : []),
        ...(f.key_id !== undefined ? [sql`key_id = ${f.key_id}`] : []),
        ...(f.outcome !== undefined ? [sql`outcome = ${f.outcome}`] : []),
        ...(f.exclude_reads === true ? [sql`not (event_type = 'api' and method = 'GET')`] : []),
        ...(beforeId !== null ? [sql`gateway_audit_logs.id < ${beforeId}::bigint`] : [])
      ])

    const pageOfRows = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, filter: AuditFilter, beforeId: Schema.NullOr(Schema.String), limit: Schema.Number }),
      Result: AuditRow,
      execute: ({ orgId, filter, beforeId, limit }) =>
        sql`select ${sql.unsafe(COLUMNS)} from gateway_audit_logs
          left join api_keys on api_keys.id = gateway_audit_logs.key_id and api_keys.org_id = gateway_audit_logs.org_id
          where ${where(orgId, filter, beforeId)} order by gateway_audit_logs.id desc limit ${limit}`
    })
    /** Newest first, keyset-paginated by id. */
    const page = Effect.fn("AuditRepo.page")(
      (orgId: OrgId, filter: AuditFilter, beforeId: string | null, limit: number) => pageOfRows({ orgId, filter, beforeId, limit }).pipe(withOrg(orgId)),
      failures
    )

    const rowOfQuery = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, queryId: Schema.String }),
      Result: AuditRow,
      execute: ({ orgId, queryId }) =>
        sql`select ${sql.unsafe(COLUMNS)} from gateway_audit_logs
          left join api_keys on api_keys.id = gateway_audit_logs.key_id and api_keys.org_id = gateway_audit_logs.org_id
          where gateway_audit_logs.org_id = ${orgId} and details ? 'query_id' and details->>'query_id' = ${queryId}
          order by gateway_audit_logs.id desc limit 1`
    })
    /** The row of the governed query with this id (the query's own row, or its request's child row). */
    const byQueryId = Effect.fn("AuditRepo.byQueryId")(
      (orgId: OrgId, queryId: string) => rowOfQuery({ orgId, queryId }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const exportStream = (orgId: OrgId, filter: AuditFilter, maxRows: number, batch = 1000) =>
      Stream.paginateChunkEffect({ beforeId: null as string | null, remaining: maxRows }, (state) =>
        page(orgId, filter, state.beforeId, Math.min(batch, state.remaining)).pipe(
          Effect.map((rows) => {
            const remaining = state.remaining - rows.length
            const last = rows.at(-1)
            const next =
              last && rows.length === Math.min(batch, state.remaining) && remaining > 0
                ? Option.some({ beforeId: last.id, remaining })
                : Option.none()
            return [rows, next] as const
          }),
          Effect.map(([rows, next]) => [Chunk.unsafeFromArray(rows), next] as const)
        )
      )

    const partialHour = ({ orgId, since, firstFullHour }: typeof StatsWindow.Encoded) =>
      sql`org_id = ${orgId} and "timestamp" >= ${since} and "timestamp" < ${firstFullHour}`
    const fullHours = ({ orgId, firstFullHour }: typeof StatsWindow.Encoded) => sql`org_id = ${orgId} and hour >= ${firstFullHour}`
    // The full hours' rows not folded into the rollups yet, by the fold row read in the statement (one snapshot with the
    // rollups); the same read just before (a fold since only adds rows) gives the planner literals for the index.
    const unfolded = ({ orgId, firstFullHour, fold }: typeof StatsWindow.Encoded) =>
      sql`org_id = ${orgId} and "timestamp" >= ${firstFullHour} and id > ${fold.throughId}::bigint
        and (txid >= ${fold.xmax}::xid8 or txid = any(${fold.xip}::xid8[]))
        and id > (select through_id from gateway_audit_fold) and not pg_visible_in_snapshot(txid, (select folded from gateway_audit_fold))`
    const hourly = SqlSchema.findAll({
      Request: StatsWindow,
      Result: HourCounts,
      execute: (window) =>
        sql`select hour::float8 as hour, sum(success)::int as success, sum(refused)::int as refused, sum(error)::int as error
          from (
            select hour, success, refused, error from gateway_audit_hourly where ${fullHours(window)}
            union all
            select "timestamp" / 3600 * 3600, count(*) filter (where outcome = 'success'),
              count(*) filter (where outcome = 'refused'), count(*) filter (where outcome = 'error')
            from gateway_audit_logs where (${partialHour(window)}) or (${unfolded(window)}) group by 1
          ) counts group by hour order by hour`
    })
    const topKeys = SqlSchema.findAll({
      Request: StatsWindow,
      Result: KeyRequests,
      execute: (window) =>
        sql`select key_id, max(principal) as principal, sum(requests)::int as requests
          from (
            select key_id, principal, requests from gateway_audit_hourly_keys where ${fullHours(window)}
            union all
            select key_id, principal, 1 from gateway_audit_logs where ((${partialHour(window)}) or (${unfolded(window)})) and key_id is not null
          ) keys group by key_id order by requests desc, key_id limit 10`
    })
    const blockReasons = SqlSchema.findAll({
      Request: StatsWindow,
      Result: BlockReasonCount,
      execute: (window) =>
        sql`select block_reason, sum(count)::int as count
          from (
            select block_reason, count from gateway_audit_hourly_block_reasons where ${fullHours(window)}
            union all
            select block_reason, 1 from gateway_audit_logs where ((${partialHour(window)}) or (${unfolded(window)})) and block_reason is not null
          ) reasons group by block_reason order by count desc, block_reason limit 20`
    })
    const foldRead = sql<{ throughId: string; xmax: string; xip: string }>`select through_id::text as "throughId",
        pg_snapshot_xmax(folded)::text as xmax, array(select pg_snapshot_xip(folded))::text as xip from gateway_audit_fold`
    /**
     * Counts since `since`: whole hours from the hourly rollups (folded off the insert path, see
     * 0024_audit_rollups_folded) and the rows not folded yet, only the window's first partial hour from
     * the log itself, so the cost follows the window, not the log. Ties in the top lists are broken by name.
     */
    const stats = Effect.fn("AuditRepo.stats")((orgId: OrgId, since: number) =>
      Effect.gen(function* () {
        const [fold] = yield* foldRead
        const window = { orgId, since, firstFullHour: Math.ceil(since / 3600) * 3600, fold: fold ?? { throughId: "0", xmax: "0", xip: "{}" } }
        const { hourly: hours, topKeys: keys, blockReasons: reasons } = yield* Effect.all(
          { hourly: hourly(window), topKeys: topKeys(window), blockReasons: blockReasons(window) },
          { concurrency: 1 }
        )
        const sum = (field: "success" | "refused" | "error") => hours.reduce((n, h) => n + h[field], 0)
        const [success, refused, error] = [sum("success"), sum("refused"), sum("error")]
        return { totals: { total: success + refused + error, success, refused, error }, hourly: hours, topKeys: keys, blockReasons: reasons }
      }).pipe(withOrg(orgId)), failures)

    /** Adds the rows of every finished transaction to the hourly rollups; how many it added. */
    const fold = Effect.fn("AuditRepo.fold")(() =>
      sql<{ added: string }>`select gateway_audit_fold()::text as added`.pipe(Effect.map(([row]) => Number(row?.added ?? 0))), failures)

    const pruneBatch = SqlSchema.single({
      Request: Schema.Struct({ before: Schema.Number, batch: Schema.Number }),
      Result: Schema.Struct({ pruned: Schema.Number }),
      execute: ({ before, batch }) =>
        sql`with gone as (delete from gateway_audit_logs where id in (
            select id from gateway_audit_logs where "timestamp" < ${before} limit ${batch}) returning 1)
          select count(*)::int as pruned from gone`
    })
    /** Cloud retention: deletes up to `batch` rows older than `before`; returns how many went. */
    const pruneBefore = Effect.fn("AuditRepo.pruneBefore")((before: number, batch = 10_000) => pruneBatch({ before, batch }).pipe(Effect.map((row) => row.pruned)), failures)

    /** The SQL (redacted, as logged) these keys ran successfully between two times (in seconds), oldest first, at most `limit` statements. */
    const statementsOf = Effect.fn("AuditRepo.statementsOf")(
      (orgId: OrgId, keyIds: ReadonlyArray<string>, fromSeconds: number, toSeconds: number, limit: number) =>
        keyIds.length === 0
          ? Effect.succeed([] as Array<string>)
          : sql<{ sql: string }>`select sql from gateway_audit_logs
              where org_id = ${orgId} and "timestamp" between ${fromSeconds} and ${toSeconds} and ${sql.in("key_id", keyIds)} and outcome = 'success' and sql is not null
              order by id limit ${limit}`.pipe(Effect.map((rows) => rows.map((row) => row.sql)), withOrg(orgId)),
      failures
    )

    return { byQueryId, statementsOf, insertStatement, insertBatch, complete, page, exportStream, stats, fold, pruneBefore } as const
  })
}) {}
