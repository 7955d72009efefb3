import { randomUUID } from "node:crypto"
import { Effect, type Scope } from "effect"
import { type Amounts, type Budget, BudgetExhausted, type CreateBudget, type Usage } from "../domain/Budget"
import { InvalidRequest, NotFound, type Unavailable } from "../domain/Errors"
import { BudgetId, KeyId, type OrgId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { type BudgetRow, BudgetsRepo } from "../repos/BudgetsRepo"
import { makeLookupCache } from "./LookupCache"

// Which budgets a key or session draws from, per replica: a new budget applies at once on the replica that made it, within this elsewhere.
const APPLICABLE_TTL_MS = 1000
const NOTHING: Usage = { queries: 0, rows: 0, bytes_scanned: 0, cost: 0, duration_ms: 0 }

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

/** What a query holds of its budgets while it runs. */
export interface Reservation {
  /** The most rows the query may return: what its row limit and every row cap allow. */
  readonly rowCap: number
  /** Charges what the query spent in place of what it held; the first budget as it now stands, for the response. */
  readonly settle: (usage: Usage) => Effect.Effect<Budget | null, Unavailable>
}

const unbudgeted = (rowLimit: number): Reservation => ({ rowCap: rowLimit, settle: () => Effect.succeed(null) })

const applicableKey = (orgId: OrgId, keyId: KeyId | null, session: string | null) => JSON.stringify([orgId, keyId, session])

/**
 * Session budgets: caps on queries, rows, bytes scanned, cost and time, per key or per named
 * session. Every governed query reserves one query and its rows in the store before it runs (so
 * concurrent queries and replicas cannot overspend) and is charged what it spent after, on every surface.
 */
export class Budgets extends Effect.Service<Budgets>()("sluice/Budgets", {
  scoped: Effect.gen(function* () {
    const repo = yield* BudgetsRepo
    const applicableCache = yield* makeLookupCache({
      ttlMs: APPLICABLE_TTL_MS,
      lookup: (key: string) => {
        const [orgId, keyId, session] = JSON.parse(key) as [OrgId, KeyId | null, string | null]
        return repo.applicable(orgId, keyId, session)
      }
    })
    const forgetAll = applicableCache.invalidateAll

    const create = Effect.fn("Budgets.create")(function* (principal: Principal, input: CreateBudget) {
      if (input.key_id !== undefined && !(yield* repo.keyExists(principal.orgId, KeyId.make(input.key_id)))) {
        return yield* new InvalidRequest({ message: `key_id: no API key "${input.key_id}" in this organization` })
      }
      const row = yield* repo
        .insert({
          id: BudgetId.make(`budget_${randomUUID().replaceAll("-", "")}`),
          org_id: principal.orgId,
          key_id: input.key_id === undefined ? null : KeyId.make(input.key_id),
          session: input.session ?? null,
          max_queries: input.max_queries ?? null,
          max_rows: input.max_rows ?? null,
          max_bytes_scanned: input.max_bytes_scanned ?? null,
          max_cost: input.max_cost ?? null,
          max_duration_ms: input.max_duration_ms ?? null,
          expires_at: input.expires_at ?? null
        })
      yield* forgetAll
      return toBudget(row)
    })

    const list = (principal: Principal) => Effect.map(repo.list(principal.orgId), (rows) => ({ items: rows.map(toBudget) }))

    const notFound = (id: string) => new NotFound({ message: `No budget "${id}" in this organization` })

    const get = Effect.fn("Budgets.get")(function* (principal: Principal, id: string) {
      const row = yield* repo.find(principal.orgId, BudgetId.make(id))
      if (row === null) return yield* notFound(id)
      return toBudget(row)
    })

    const remove = Effect.fn("Budgets.remove")(function* (principal: Principal, id: string) {
      if (!(yield* repo.remove(principal.orgId, BudgetId.make(id)))) return yield* notFound(id)
      yield* forgetAll
    })

    /**
     * Holds one query and up to `rowLimit` rows of every budget in `ids`, atomically in the store;
     * refuses with budget_exhausted when one of them is spent. `giveBack` returns what was not settled.
     */
    const hold = (principal: Principal, ids: ReadonlyArray<BudgetId>, rowLimit: number) =>
      Effect.gen(function* () {
        const rows = yield* repo.reserve(principal.orgId, ids, rowLimit)
        if (rows.length === 0) return { reservation: unbudgeted(rowLimit), giveBack: Effect.void }
        if (!rows[0]!.granted) {
          const row = rows.find((r) => spent(r) !== undefined) ?? rows[0]!
          const owner = row.session !== null ? `session "${row.session}"` : "this API key"
          return yield* new BudgetExhausted({ message: `The budget of ${owner} is spent (${spent(row) ?? "a limit"})`, budget_id: row.id })
        }
        const held = rows.map((r) => r.id)
        const heldRows = rows[0]!.held_rows
        let settled = false
        const settle = (usage: Usage) =>
          Effect.suspend(() => {
            settled = true
            return repo.settle(principal.orgId, held, heldRows, usage)
          }).pipe(Effect.uninterruptible)
        const reservation: Reservation = {
          rowCap: heldRows,
          settle: (usage: Usage) =>
            Effect.map(settle(usage), (charged) => {
              const first = charged.find((c) => c.id === held[0]) ?? charged[0]
              return first === undefined ? null : toBudget(first)
            })
        }
        return { reservation, giveBack: Effect.suspend(() => (settled ? Effect.void : Effect.ignoreLogged(settle(NOTHING)))) }
      })

    const applicable = (principal: Principal, session: string | undefined) => applicableCache.get(applicableKey(principal.orgId, principal.keyId, session ?? null))

    /** Whether this replica knows, without asking the store, that no budget applies to the caller's query (so `withReservation` would reserve nothing). */
    const noneAppliesNow = (principal: Principal, session: string | undefined) =>
      applicableCache.peek(applicableKey(principal.orgId, principal.keyId, session ?? null))?.length === 0

    // No span, and no region at all for a query no budget applies to: this runs on every query (bench/README.md).
    /** Runs `use` under a reservation of the query and its rows (see `hold`); what `use` did not settle is given back when it ends. */
    const withReservation = <A, E, R>(
      principal: Principal,
      session: string | undefined,
      rowLimit: number,
      use: (reservation: Reservation) => Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | BudgetExhausted | Unavailable, R> =>
      Effect.flatMap(applicable(principal, session), (ids) =>
        ids.length === 0
          ? use(unbudgeted(rowLimit))
          : Effect.acquireUseRelease(
              hold(principal, ids, rowLimit),
              (held) => use(held.reservation),
              (held) => held.giveBack
            )
      )

    /** The same reservation held until the caller's scope ends: for a stream, whose rows are charged when they end. */
    const reserve = (principal: Principal, session: string | undefined, rowLimit: number): Effect.Effect<Reservation, BudgetExhausted | Unavailable, Scope.Scope> =>
      Effect.flatMap(applicable(principal, session), (ids) =>
        ids.length === 0
          ? Effect.succeed(unbudgeted(rowLimit))
          : Effect.map(
              Effect.acquireRelease(hold(principal, ids, rowLimit), (held) => held.giveBack),
              (held) => held.reservation
            )
      )

    return { create, list, get, remove, withReservation, reserve, noneAppliesNow } as const
  }),
  dependencies: [BudgetsRepo.Default]
}) {}
