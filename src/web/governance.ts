import type { Budget } from "../domain/Budget"
import type { PiiRule } from "../domain/Pii"

const sameColumn = (a: PiiRule, b: PiiRule) => a.table.toLowerCase() === b.table.toLowerCase() && a.column.toLowerCase() === b.column.toLowerCase()

/** The rules with `rule` in place of any rule for the same column (one action per column). */
export const withRule = (rules: ReadonlyArray<PiiRule>, rule: PiiRule): ReadonlyArray<PiiRule> => {
  const at = rules.findIndex((r) => sameColumn(r, rule))
  return at === -1 ? [...rules, rule] : rules.map((r, i) => (i === at ? rule : r))
}

/** Table globs typed one per line (commas also separate); blank lines dropped. */
export const globsOf = (text: string): ReadonlyArray<string> =>
  text
    .split(/[\n,]/)
    .map((g) => g.trim())
    .filter((g) => g !== "")

const AMOUNTS = [
  ["queries", "Queries"],
  ["rows", "Rows"],
  ["bytes_scanned", "Bytes scanned"],
  ["cost", "Cost"],
  ["duration_ms", "Time (ms)"]
] as const

/** The amounts a budget caps, each with what has been used of it. */
export const usageOf = (budget: Budget): ReadonlyArray<{ readonly label: string; readonly used: number; readonly limit: number }> =>
  AMOUNTS.flatMap(([field, label]) => {
    const limit = budget.limits[field]
    return limit === null ? [] : [{ label, used: budget.used[field] ?? 0, limit }]
  })
