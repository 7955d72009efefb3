import { Either } from "effect"
import type { Analysis } from "./sqlguard/Analysis"
import { tokenize } from "./sqlguard/Lexer"
import type { CheckedStatement } from "./sqlguard/SqlGuard"

/** Where the statement's last token ends: before a trailing semicolon, comment or whitespace. */
const statementEnd = (checked: CheckedStatement) => {
  const tokens = tokenize(checked.sql, checked.profile.lexical)
  const last = tokens.findLast((t) => t.text !== ";")
  return last?.end ?? checked.sql.length
}

const splice = (sql: string, start: number, end: number, text: string) => sql.slice(0, start) + text + sql.slice(end)

/** The edit that makes the outer query return at most `cap` rows, in the dialect's own syntax; undefined when none applies. */
const capEdit = (checked: CheckedStatement, cap: number): string | undefined => {
  const { analysis, sql, profile } = checked
  const limit = analysis.limit
  const append = (clause: string) => {
    const end = statementEnd(checked)
    return splice(sql, end, end, clause)
  }
  if (analysis.kind !== "query") return undefined
  if (limit.kind === "literal") return limit.value <= cap ? undefined : splice(sql, limit.start, limit.end, String(cap))
  if (limit.kind === "fixed") return undefined
  if (profile.limitSyntax === "limit") return append(`\nLIMIT ${cap}`)
  if (analysis.topAt !== undefined) return splice(sql, analysis.topAt, analysis.topAt, ` TOP (${cap})`)
  if (analysis.ordered) return append(`\nOFFSET 0 ROWS FETCH NEXT ${cap} ROWS ONLY`)
  return undefined
}

const cappedAt = (analysis: Analysis, cap: number) => analysis.limit.kind === "literal" && analysis.limit.value === cap

// A checked statement is the guard's memoized verdict, so a repeated statement's capped form is known by the same object.
const cappedForms = new WeakMap<CheckedStatement, Map<number, CheckedStatement>>()

/**
 * Rewrites the outer query's limit to `rowLimit + 1` (the extra row tells a complete result from a
 * truncated one), keeping a smaller limit the caller wrote and its OFFSET. The edit is located by
 * the parse tree, and the edited text must pass the same check and show the new limit; otherwise
 * the statement runs as written and the driver's own cap still holds.
 */
export const capRows = (
  checked: CheckedStatement,
  rowLimit: number,
  recheck: (sql: string) => Either.Either<CheckedStatement, unknown>
): CheckedStatement => {
  const cap = rowLimit + 1
  let forms = cappedForms.get(checked)
  const known = forms?.get(cap)
  if (known !== undefined) return known
  const edited = capEdit(checked, cap)
  const rechecked = edited === undefined ? undefined : recheck(edited)
  const capped = rechecked !== undefined && Either.isRight(rechecked) && cappedAt(rechecked.right.analysis, cap) ? rechecked.right : checked
  if (forms === undefined) cappedForms.set(checked, (forms = new Map()))
  forms.set(cap, capped)
  return capped
}
