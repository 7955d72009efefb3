import { tokenize, type Token } from "./Lexer"
import type { DialectProfile } from "./Dialects"

const TAIL = new Set(["GROUP", "ORDER", "LIMIT"])

/**
 * DuckDB's simplified `PIVOT t ON cols [USING aggregates] [GROUP BY …]`, which no grammar here
 * parses, as the SELECT the guard checks in its place: `SELECT cols, aggregates FROM t GROUP BY …`.
 * Every part of the statement is in the stand-in, so each table, function and clause is walked;
 * what the pivot's columns hold is not traced (they are made from values), and its LIMIT is left
 * to the driver's cap. `at` maps an offset in the stand-in back to the statement, so a table named
 * in it is found where it is written.
 */
export const pivotStandIn = (sql: string, profile: DialectProfile): { readonly text: string; readonly at: (offset: number) => number } | undefined => {
  if (profile.dbType !== "duckdb" || !/^\s*pivot\b/i.test(sql)) return undefined
  const tokens = tokenize(sql, profile.lexical)
  const topLevel: Array<Token> = []
  let depth = 0
  for (const token of tokens) {
    if (token.kind === "punct" && token.text === "(") depth++
    else if (token.kind === "punct" && token.text === ")") depth--
    else if (depth === 0 && token.kind === "word") topLevel.push(token)
  }
  const on = topLevel.find((t) => t.text === "ON")
  if (topLevel[0]?.text !== "PIVOT" || on === undefined) return undefined
  const tail = topLevel.find((t) => t.start > on.start && TAIL.has(t.text))
  const using = topLevel.find((t) => t.start > on.start && t.text === "USING" && (tail === undefined || t.start < tail.start))
  const end = tail?.start ?? sql.length
  // Each piece of the statement, in the stand-in's order, after the text put before it.
  const pieces: Array<readonly [string, number, number]> = [
    ["SELECT ", on.end, using?.start ?? end],
    ...(using === undefined ? [] : [[", ", using.end, end] as const]),
    [" FROM ", topLevel[0].end, on.start],
    [" ", end, sql.length]
  ]
  let text = ""
  const starts: Array<readonly [number, number]> = []
  for (const [before, from, to] of pieces) {
    text += before
    starts.push([text.length, from])
    text += sql.slice(from, to)
  }
  const at = (offset: number) => {
    const [standIn, original] = starts.findLast(([start]) => start <= offset) ?? [0, 0]
    return original + offset - standIn
  }
  return { text, at }
}
