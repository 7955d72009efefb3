import type { DbType } from "../domain/Connection"
import { DIALECTS } from "./sqlguard/Dialects"
import { type Token, tokenize } from "./sqlguard/Lexer"

export interface Cte {
  /** The name as written (quotes included), to select from. */
  readonly name: string
  /** `name [(columns)] AS [NOT] [MATERIALIZED] ( … )`, exactly as written. */
  readonly text: string
}

export interface CteList {
  readonly recursive: boolean
  readonly ctes: ReadonlyArray<Cte>
}

/** The index of the `)` that closes the `(` at `open`, or -1. */
const closing = (tokens: ReadonlyArray<Token>, open: number) => {
  let depth = 0
  for (let i = open; i < tokens.length; i++) {
    if (tokens[i]!.kind !== "punct") continue
    if (tokens[i]!.text === "(") depth++
    else if (tokens[i]!.text === ")" && --depth === 0) return i
  }
  return -1
}

/**
 * The common table expressions of a statement that begins with `WITH`, each cut from the text by
 * the dialect's own tokens (so parentheses in strings and comments do not count), or undefined
 * when the statement has none in that form. What is cut out is only ever run as a new statement
 * that passes the whole governed check again.
 */
export const splitCtes = (sql: string, dbType: DbType): CteList | undefined => {
  const tokens = tokenize(sql, DIALECTS[dbType].lexical)
  let i = 0
  if (tokens[i]?.kind !== "word" || tokens[i]!.text !== "WITH") return undefined
  i++
  const recursive = tokens[i]?.kind === "word" && tokens[i]!.text === "RECURSIVE"
  if (recursive) i++
  const ctes: Array<Cte> = []
  while (true) {
    const name = tokens[i]
    if (name === undefined || (name.kind !== "word" && name.kind !== "quoted")) return undefined
    i++
    if (tokens[i]?.text === "(") {
      const close = closing(tokens, i)
      if (close < 0) return undefined
      i = close + 1
    }
    if (tokens[i]?.kind !== "word" || tokens[i]!.text !== "AS") return undefined
    i++
    while (tokens[i]?.kind === "word" && (tokens[i]!.text === "NOT" || tokens[i]!.text === "MATERIALIZED")) i++
    if (tokens[i]?.text !== "(") return undefined
    const close = closing(tokens, i)
    if (close < 0) return undefined
    ctes.push({ name: sql.slice(name.start, name.end), text: sql.slice(name.start, tokens[close]!.end) })
    i = close + 1
    if (tokens[i]?.text !== ",") return { recursive, ctes }
    i++
  }
}

/** A statement that reads one CTE of the list on its own, with the CTEs before it that it may use. */
export const cteAlone = (list: CteList, index: number) =>
  `WITH ${list.recursive ? "RECURSIVE " : ""}${list.ctes
    .slice(0, index + 1)
    .map((c) => c.text)
    .join(",\n")}\nSELECT * FROM ${list.ctes[index]!.name}`
