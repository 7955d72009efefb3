import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { Usage } from "../domain/Budget"
import { BudgetId, KeyId, OrgId } from "../domain/Ids"
import { conflictOnDuplicate, storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const BudgetRow = Schema.Struct({
  id: BudgetId,
  org_id: OrgId,
  key_id: Schema.NullOr(KeyId),
  session: Schema.NullOr(Schema.String),
  max_queries: Schema.NullOr(Schema.Number),
  max_rows: Schema.NullOr(Schema.Number),
  max_bytes_scanned: Schema.NullOr(Schema.Number),
  max_cost: Schema.NullOr(Schema.Number),
  max_duration_ms: Schema.NullOr(Schema.Number),
  used_queries: Schema.Number,
  used_rows: Schema.Number,
  used_bytes_scanned: Schema.Number,
  used_cost: Schema.Number,
  used_duration_ms: Schema.Number,
  expires_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf
})
export type BudgetRow = typeof BudgetRow.Type

const NewBudget = BudgetRow.omit("used_queries", "used_rows", "used_bytes_scanned", "used_cost", "used_duration_ms", "created_at")

const ReservedRow = Schema.Struct({ ...BudgetRow.fields, granted: Schema.Boolean, held_rows: Schema.Number })

const Spent = Schema.Struct({ queries: Schema.Number, rows: Schema.Number, bytes_scanned: Schema.Number, cost: Schema.Number, duration_ms: Schema.Number })

const ById = Schema.Struct({ orgId: OrgId, id: BudgetId })

const COLUMNS = `id, org_id, key_id, session, max_queries::float8 as max_queries, max_rows::float8 as max_rows,
  max_bytes_scanned::float8 as max_bytes_scanned, max_cost, max_duration_ms, used_queries::float8 as used_queries,
  used_rows::float8 as used_rows, used_bytes_scanned::float8 as used_bytes_scanned, used_cost, used_duration_ms,
  expires_at, created_at`

export class BudgetsRepo extends Effect.Service<BudgetsRepo>()("sluice/BudgetsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const columns = sql.unsafe(COLUMNS)
    const failures = storeErrors("budget store")

    const insertBudget = SqlSchema.single({
      Request: NewBudget,
      Result: BudgetRow,
      execute: (row) => sql`insert into session_budgets ${sql.insert(row)} returning ${columns}`
    })
    const insert = Effect.fn("BudgetsRepo.insert")(
      (row: typeof NewBudget.Type) =>
        insertBudget(row).pipe(conflictOnDuplicate(`A budget for session "${row.session}" already exists`), withOrg(row.org_id)),
      failures
    )

    const budgetsOf = SqlSchema.findAll({
      Request: OrgId,
      Result: BudgetRow,
      execute: (orgId) => sql`select ${columns} from session_budgets where org_id = ${orgId} order by created_at, id`
    })
    const list = Effect.fn("BudgetsRepo.list")((orgId: OrgId) => budgetsOf(orgId).pipe(withOrg(orgId)), failures)

    const budgetById = SqlSchema.findOne({
      Request: ById,
      Result: BudgetRow,
      execute: ({ orgId, id }) => sql`select ${columns} from session_budgets where org_id = ${orgId} and id = ${id}`
    })
    const find = Effect.fn("BudgetsRepo.find")((orgId: OrgId, id: BudgetId) => budgetById({ orgId, id }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const removeBudget = SqlSchema.findOne({
      Request: ById,
      Result: Schema.Struct({ id: BudgetId }),
      execute: ({ orgId, id }) => sql`delete from session_budgets where org_id = ${orgId} and id = ${id} returning id`
    })
    const remove = Effect.fn("BudgetsRepo.remove")((orgId: OrgId, id: BudgetId) => removeBudget({ orgId, id }).pipe(Effect.map(Option.isSome), withOrg(orgId)), failures)

    const applicableIds = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, keyId: Schema.NullOr(KeyId), session: Schema.NullOr(Schema.String) }),
      Result: Schema.Struct({ id: BudgetId }),
      execute: ({ orgId, keyId, session }) =>
        sql`select id from session_budgets where org_id = ${orgId}
          and (expires_at is null or expires_at > now())
          and ((key_id is not null and key_id = ${keyId}) or (session is not null and session = ${session}))
          order by session nulls last, id`
    })
    /** The ids of the unexpired budgets a query of this key, in this session, draws from. */
    const applicable = Effect.fn("BudgetsRepo.applicable")(
      (orgId: OrgId, keyId: KeyId | null, session: string | null) =>
        applicableIds({ orgId, keyId, session }).pipe(
          Effect.map((rows) => rows.map((row) => row.id)),
          withOrg(orgId)
        ),
      failures
    )

    const holdOnBudgets = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, ids: Schema.Array(BudgetId), rowLimit: Schema.Number }),
      Result: ReservedRow,
      execute: ({ orgId, ids, rowLimit }) =>
        sql`with locked as (
            select * from session_budgets where org_id = ${orgId} and id in ${sql.in(ids)}
              and (expires_at is null or expires_at > now()) order by id for update),
          hold as (
            select not exists (select 1 from locked where used_queries >= max_queries or used_rows >= max_rows
                or used_bytes_scanned >= max_bytes_scanned or used_cost >= max_cost or used_duration_ms >= max_duration_ms) as granted,
              least(${rowLimit}::bigint, min(max_rows - used_rows)) as held_rows
            from locked),
          held as (
            update session_budgets b set used_queries = b.used_queries + 1,
                used_rows = b.used_rows + case when b.max_rows is null then 0 else hold.held_rows end
              from locked, hold where b.id = locked.id and hold.granted returning b.id)
          select ${columns}, granted, held_rows::float8 as held_rows from locked, hold order by session nulls last, id`
    })
    /**
     * In one statement, under row locks taken in id order: unless one of the unexpired budgets is
     * spent, holds one query and `held_rows` rows (at most `rowLimit`, at most what each row cap has
     * left) on every one of them. Returns the budgets as they stood before, with whether it held.
     */
    const reserve = Effect.fn("BudgetsRepo.reserve")(
      (orgId: OrgId, ids: ReadonlyArray<BudgetId>, rowLimit: number) => holdOnBudgets({ orgId, ids, rowLimit }).pipe(withOrg(orgId)),
      failures
    )

    const chargeBudgets = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, ids: Schema.Array(BudgetId), heldRows: Schema.Number, usage: Spent }),
      Result: BudgetRow,
      execute: ({ orgId, ids, heldRows, usage }) =>
        sql`update session_budgets set used_queries = used_queries - 1 + ${usage.queries},
            used_rows = used_rows - case when max_rows is null then 0 else ${heldRows}::bigint end + ${usage.rows},
            used_bytes_scanned = used_bytes_scanned + ${usage.bytes_scanned},
            used_cost = used_cost + ${usage.cost}, used_duration_ms = used_duration_ms + ${usage.duration_ms}
          where org_id = ${orgId} and id in ${sql.in(ids)} returning ${columns}`
    })
    /** Replaces what `reserve` held (one query, `heldRows` rows) by what the query spent; returns the budgets as they now stand. */
    const settle = Effect.fn("BudgetsRepo.settle")(
      (orgId: OrgId, ids: ReadonlyArray<BudgetId>, heldRows: number, usage: Usage) => chargeBudgets({ orgId, ids, heldRows, usage }).pipe(withOrg(orgId)),
      failures
    )

    const keyOfOrg = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, keyId: KeyId }),
      Result: Schema.Struct({ id: KeyId }),
      execute: ({ orgId, keyId }) => sql`select id from api_keys where org_id = ${orgId} and id = ${keyId}`
    })
    const keyExists = Effect.fn("BudgetsRepo.keyExists")((orgId: OrgId, keyId: KeyId) => keyOfOrg({ orgId, keyId }).pipe(Effect.map(Option.isSome), withOrg(orgId)), failures)

    return { insert, list, find, remove, applicable, reserve, settle, keyExists } as const
  })
}) {}
