import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Usage } from "../domain/Budget"
import type { OrgId } from "../domain/Ids"
import { tenantScope } from "./Tenant"

export interface BudgetRow {
  readonly id: string
  readonly org_id: string
  readonly key_id: string | null
  readonly session: string | null
  readonly max_queries: number | null
  readonly max_rows: number | null
  readonly max_bytes_scanned: number | null
  readonly max_cost: number | null
  readonly max_duration_ms: number | null
  readonly used_queries: number
  readonly used_rows: number
  readonly used_bytes_scanned: number
  readonly used_cost: number
  readonly used_duration_ms: number
  readonly expires_at: Date | null
  readonly created_at: Date
}

const COLUMNS = `id, org_id, key_id, session, max_queries::float8 as max_queries, max_rows::float8 as max_rows,
  max_bytes_scanned::float8 as max_bytes_scanned, max_cost, max_duration_ms, used_queries::float8 as used_queries,
  used_rows::float8 as used_rows, used_bytes_scanned::float8 as used_bytes_scanned, used_cost, used_duration_ms,
  expires_at, created_at`

export class BudgetsRepo extends Effect.Service<BudgetsRepo>()("sluice/BudgetsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const columns = sql.unsafe(COLUMNS)

    const insert = (row: Omit<BudgetRow, "used_queries" | "used_rows" | "used_bytes_scanned" | "used_cost" | "used_duration_ms" | "created_at">) =>
      sql<BudgetRow>`insert into session_budgets ${sql.insert(row)} returning ${columns}`.pipe(
        Effect.map((rows) => rows[0]!),
        withOrg(row.org_id as OrgId)
      )

    const list = (orgId: OrgId) =>
      sql<BudgetRow>`select ${columns} from session_budgets where org_id = ${orgId} order by created_at, id`.pipe(withOrg(orgId))

    const find = (orgId: OrgId, id: string) =>
      sql<BudgetRow>`select ${columns} from session_budgets where org_id = ${orgId} and id = ${id}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    const remove = (orgId: OrgId, id: string) =>
      sql`delete from session_budgets where org_id = ${orgId} and id = ${id} returning id`.pipe(
        Effect.map((rows) => rows.length > 0),
        withOrg(orgId)
      )

    /** The ids of the unexpired budgets a query of this key, in this session, draws from. */
    const applicable = (orgId: OrgId, keyId: string | null, session: string | null) =>
      sql<{ readonly id: string }>`select id from session_budgets where org_id = ${orgId}
          and (expires_at is null or expires_at > now())
          and ((key_id is not null and key_id = ${keyId}) or (session is not null and session = ${session}))
          order by session nulls last, id`.pipe(
        Effect.map((rows) => rows.map((row) => row.id)),
        withOrg(orgId)
      )

    /**
     * In one statement, under row locks taken in id order: unless one of the unexpired budgets is
     * spent, holds one query and `held_rows` rows (at most `rowLimit`, at most what each row cap has
     * left) on every one of them. Returns the budgets as they stood before, with whether it held.
     */
    const reserve = (orgId: OrgId, ids: ReadonlyArray<string>, rowLimit: number) =>
      sql<BudgetRow & { readonly granted: boolean; readonly held_rows: number }>`with locked as (
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
        select ${columns}, granted, held_rows::float8 as held_rows from locked, hold order by session nulls last, id`.pipe(withOrg(orgId))

    /** Replaces what `reserve` held (one query, `heldRows` rows) by what the query spent; returns the budgets as they now stand. */
    const settle = (orgId: OrgId, ids: ReadonlyArray<string>, heldRows: number, usage: Usage) =>
      sql<BudgetRow>`update session_budgets set used_queries = used_queries - 1 + ${usage.queries},
          used_rows = used_rows - case when max_rows is null then 0 else ${heldRows}::bigint end + ${usage.rows},
          used_bytes_scanned = used_bytes_scanned + ${usage.bytes_scanned},
          used_cost = used_cost + ${usage.cost}, used_duration_ms = used_duration_ms + ${usage.duration_ms}
        where org_id = ${orgId} and id in ${sql.in(ids)} returning ${columns}`.pipe(withOrg(orgId))

    const keyExists = (orgId: OrgId, keyId: string) =>
      sql`select 1 from api_keys where org_id = ${orgId} and id = ${keyId}`.pipe(
        Effect.map((rows) => rows.length > 0),
        withOrg(orgId)
      )

    return { insert, list, find, remove, applicable, reserve, settle, keyExists } as const
  })
}) {}
