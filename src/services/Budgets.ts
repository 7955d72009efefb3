import { randomUUID } from "node:crypto"
import { Cache, Duration, Effect, Exit } from "effect"
import { type Amounts, type Budget, BudgetExhausted, type CreateBudget, type Usage } from "../domain/Budget"
import { InvalidRequest, NotFound } from "../domain/Errors"
import type { OrgId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { type BudgetRow, BudgetsRepo } from "../repos/BudgetsRepo"
import { conflictOnDuplicate, storeUnavailable } from "./StoreUnavailable"

const storeDown = storeUnavailable("budget store")
// Which budgets a key or session draws from, per replica; a charge refreshes it, other replicas within this.
const APPLICABLE_TTL = Duration.seconds(1)

const AMOUNTS = [
  ["queries", "max_queries", "used_queries"],
  ["rows", "max_rows", "used_rows"],
  ["bytes_scanned", "max_bytes_scanned", "used_bytes_scanned"],
  ["cost", "max_cost", "used_cost"],
  ["duration_ms", "max_duration_ms", "used_duration_ms"]
] as const

const amounts = (f: (amount: (typeof AMOUNTS)[number]) => number | null) =>
  Object.fromEntries(AMOUNTS.map((a) => [a[0], f(a)])) as unknown as Amounts

/** The first amount this budget has spent, if any. */
const spent = (row: BudgetRow) => AMOUNTS.find(([, max, used]) => row[max] !== null && row[used] >= row[max]!)?.[0]

export const toBudget = (row: BudgetRow): Budget => ({
  id: row.id,
  session: row.session,
  key_id: row.key_id,
  limits: amounts(([, max]) => row[max]),
  used: amounts(([, , used]) => row[used]),
  remaining: amounts(([, max, used]) => (row[max] === null ? null : Math.max(0, row[max]! - row[used]))),
  exhausted: spent(row) !== undefined,
  expires_at: row.expires_at,
  created_at: row.created_at
})

const applicableKey = (orgId: OrgId, keyId: string | null, session: string | null) => JSON.stringify([orgId, keyId, session])

/**
 * Session budgets: caps on queries, rows, bytes scanned, cost and time, per key or per named
 * session. Every governed query checks them before it runs and is charged after, on every surface.
 */
export class Budgets extends Effect.Service<Budgets>()("sluice/Budgets", {
  effect: Effect.gen(function* () {
    const repo = yield* BudgetsRepo
    // The newest state of each budget this replica has seen, so keys sharing a session see each other's charges at once.
    const latest = new Map<string, BudgetRow>()
    const remember = (rows: ReadonlyArray<BudgetRow>) =>
      rows.map((row) => {
        const known = latest.get(row.id)
        const newest = known !== undefined && known.used_queries > row.used_queries ? known : row
        latest.set(row.id, newest)
        return newest
      })
    const applicableCache = yield* Cache.makeWith({
      capacity: 10_000,
      lookup: (key: string) => {
        const [orgId, keyId, session] = JSON.parse(key) as [OrgId, string | null, string | null]
        return repo.applicable(orgId, keyId, session).pipe(storeDown)
      },
      timeToLive: (exit) => (Exit.isSuccess(exit) ? APPLICABLE_TTL : Duration.zero)
    })
    const forgetAll = Effect.zipRight(applicableCache.invalidateAll, Effect.sync(() => latest.clear()))

    const create = Effect.fn("Budgets.create")(function* (principal: Principal, input: CreateBudget) {
      if (input.key_id !== undefined && !(yield* repo.keyExists(principal.orgId, input.key_id).pipe(storeDown))) {
        return yield* new InvalidRequest({ message: `key_id: no API key "${input.key_id}" in this organization` })
      }
      const row = yield* repo
        .insert({
          id: `budget_${randomUUID().replaceAll("-", "")}`,
          org_id: principal.orgId,
          key_id: input.key_id ?? null,
          session: input.session ?? null,
          max_queries: input.max_queries ?? null,
          max_rows: input.max_rows ?? null,
          max_bytes_scanned: input.max_bytes_scanned ?? null,
          max_cost: input.max_cost ?? null,
          max_duration_ms: input.max_duration_ms ?? null,
          expires_at: input.expires_at ?? null
        })
        .pipe(conflictOnDuplicate(`A budget for session "${input.session}" already exists`), storeDown)
      yield* forgetAll
      return toBudget(row)
    })

    const list = (principal: Principal) => Effect.map(repo.list(principal.orgId).pipe(storeDown), (rows) => ({ items: rows.map(toBudget) }))

    const notFound = (id: string) => new NotFound({ message: `No budget "${id}" in this organization` })

    const get = Effect.fn("Budgets.get")(function* (principal: Principal, id: string) {
      const row = yield* repo.find(principal.orgId, id).pipe(storeDown)
      if (row === null) return yield* notFound(id)
      return toBudget(row)
    })

    const remove = Effect.fn("Budgets.remove")(function* (principal: Principal, id: string) {
      if (!(yield* repo.remove(principal.orgId, id).pipe(storeDown))) return yield* notFound(id)
      yield* forgetAll
    })

    // Untraced: on the per-query path a span per call is measurable CPU (bench/README.md).
    /** The budgets a query draws from; refuses with budget_exhausted when one of them is spent. */
    const reserve = Effect.fnUntraced(function* (principal: Principal, session: string | undefined) {
      const rows = remember(yield* applicableCache.get(applicableKey(principal.orgId, principal.keyId, session ?? null)))
      for (const row of rows) {
        const amount = spent(row)
        if (amount === undefined) continue
        const owner = row.session !== null ? `session "${row.session}"` : "this API key"
        return yield* new BudgetExhausted({ message: `The budget of ${owner} is spent (${amount})`, budget_id: row.id })
      }
      return rows
    })

    /** Charges one query to the budgets `reserve` returned; the first one as it now stands, for the response. */
    const charge = Effect.fnUntraced(function* (principal: Principal, rows: ReadonlyArray<BudgetRow>, usage: Usage) {
      if (rows.length === 0) return null
      const charged = remember(yield* repo.charge(principal.orgId, rows.map((r) => r.id), usage).pipe(storeDown))
      const updated = rows.flatMap((r) => charged.filter((c) => c.id === r.id))
      return updated[0] === undefined ? null : toBudget(updated[0])
    })

    return { create, list, get, remove, reserve, charge } as const
  }),
  dependencies: [BudgetsRepo.Default]
}) {}
