import { Either } from "effect"
import type { QueryShape } from "./lineage/QueryShape"
import { Refusal } from "./sqlguard/Analysis"
import { type DialectProfile, sessionLexical } from "./sqlguard/Dialects"
import { type Token, tokenize } from "./sqlguard/Lexer"

/**
 * Rows come from a database in the order it reads them, and that order can follow a masked value:
 * a table loaded sorted by SSN, a clustered or covering index on an email, a partition. Over a
 * relation with PII rules, every query level whose rows are returned or chosen in that order is
 * put in a total order of its own outputs: the outer query, and each one that keeps some of its
 * rows (LIMIT, OFFSET, FETCH, DISTINCT ON, ARRAY(…), a scalar subquery SQLite answers with its
 * first row). The caller's ORDER BY keys stay first; the level's output columns, by position, break
 * its ties. Rows alike in every output column cannot be told apart, so the result, and which rows a
 * limit keeps, depend on output values alone. Listing aggregates and windows that number rows or
 * count them by position get the same treatment; aggregates whose result is one row's among ties
 * are refused.
 */

/** Aggregates whose value is one row's among ties: no order of their own makes them depend on values alone. */
const ORDER_SENSITIVE = new Map<string, string>([
  ...["FIRST", "LAST", "ANY_VALUE", "ARBITRARY", "MIN_BY", "MAX_BY", "ARG_MIN", "ARG_MAX", "ARG_MIN_NULL", "ARG_MAX_NULL", "ARGMIN", "ARGMAX", "MODE", "LISTAGG", "ARRAY_CONCAT_AGG"].map(
    (f) => [f, "aggregate with min, max, count or sum, or list values with string_agg, array_agg or group_concat"] as const
  )
])

/** Window functions that number rows or take a value from another row: their window's order is made total. */
const NUMBERING = new Set(["ROW_NUMBER", "NTILE", "LAG", "LEAD"])
/** Window functions that take a value from a row of the frame: total only over a ROWS frame (a RANGE or GROUPS frame ends at the current row's last tie). */
const FRAME_VALUE = new Set(["FIRST_VALUE", "LAST_VALUE", "NTH_VALUE"])
const FRAME_UNITS = new Set(["ROWS", "RANGE", "GROUPS"])

/**
 * Aggregates that list their rows' values in the order rows come: each is ordered by the values it
 * lists after its own keys, so rows that tie list alike. The number is how many leading arguments
 * are the values (the rest is a separator); MySQL's GROUP_CONCAT concatenates all of them.
 */
const LISTING_AGGREGATES = new Map<string, number>([
  ["STRING_AGG", 1],
  ["ARRAY_AGG", 1],
  ["LIST", 1],
  ["JSON_AGG", 1],
  ["JSONB_AGG", 1],
  ["JSON_ARRAYAGG", 1],
  ["JSON_GROUP_ARRAY", 1],
  ["XMLAGG", 1],
  ["JSON_OBJECT_AGG", 2],
  ["JSONB_OBJECT_AGG", 2],
  ["JSON_OBJECTAGG", 2],
  ["JSON_GROUP_OBJECT", 2],
  ["GROUP_CONCAT", 1]
])

/** Aggregates: a column read inside one is not one row's value. */
const AGGREGATES = new Set([
  ...["COUNT", "SUM", "AVG", "MIN", "MAX", "TOTAL", "STRING_AGG", "BIT_AND", "BIT_OR", "BIT_XOR", "STD", "STDDEV", "STDDEV_POP", "STDDEV_SAMP"],
  ...["VARIANCE", "VAR_POP", "VAR_SAMP", "MEDIAN", "PERCENTILE", "PERCENTILE_CONT", "PERCENTILE_DISC"],
  ...LISTING_AGGREGATES.keys(),
  ...ORDER_SENSITIVE.keys()
])
/** Words of an expression that name no column. */
const NOT_COLUMNS = new Set([
  ...["CASE", "WHEN", "THEN", "ELSE", "END", "AND", "OR", "NOT", "NULL", "IS", "IN", "LIKE", "GLOB", "REGEXP", "RLIKE", "BETWEEN", "DISTINCT", "TRUE", "FALSE"],
  ...["COLLATE", "ESCAPE", "BINARY", "DIV", "MOD", "XOR", "EXISTS", "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "AS"]
])
/** Words that type the string after them (`date '2024-01-01'`, `x'ff'`): a literal, not a column. */
const LITERAL_TYPES = new Set(["DATE", "TIME", "TIMESTAMP", "DATETIME", "INTERVAL", "N", "X", "B"])
/** Words that end a GROUP BY at its level. */
const AFTER_GROUP_BY = new Set(["HAVING", "WINDOW", "ORDER", "LIMIT", "QUALIFY", "UNION", "EXCEPT", "INTERSECT", "WITH"])

/** Words that end a select list at its level. */
const AFTER_SELECT_LIST = new Set(["FROM", "INTO", "WHERE", "GROUP", "HAVING", "WINDOW", "QUALIFY", "ORDER", "LIMIT", "OFFSET", "FETCH", "UNION", "EXCEPT", "INTERSECT", "MINUS"])
/** Words that end an ORDER BY at its level. */
const AFTER_ORDER_BY = new Set(["LIMIT", "OFFSET", "FETCH", "FOR", "SETTINGS", "FORMAT"])
/** `format(…)`, `x.offset`: a function or a column of that name, not a clause (LIMIT, OFFSET and FETCH take a parenthesized expression). */
const isCall = (tokens: ReadonlyArray<Token>, i: number) =>
  tokens[i - 1]?.text === "." || (tokens[i + 1]?.text === "(" && !["LIMIT", "OFFSET", "FETCH"].includes(tokens[i]!.text))
/** Modifiers between SELECT and its first item. */
const SELECT_MODIFIERS = new Set(["ALL", "DISTINCT", "DISTINCTROW", "HIGH_PRIORITY", "STRAIGHT_JOIN", "SQL_SMALL_RESULT", "SQL_BIG_RESULT", "SQL_BUFFER_RESULT", "SQL_NO_CACHE", "SQL_CACHE", "SQL_CALC_FOUND_ROWS"])
/** A parenthesized query after one of these is a relation or a set, whose order does not matter. */
const NOT_SCALAR = new Set(["FROM", "JOIN", "AS", "IN", "EXISTS", "ANY", "ALL", "SOME", "LATERAL", "UNION", "EXCEPT", "INTERSECT", "MINUS", "WITH"])
/** Words that begin a clause: a parenthesized query after a comma is a relation in FROM, a value elsewhere. */
const CLAUSES = new Set(["SELECT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "WINDOW", "QUALIFY", "ON", "USING", "SET", "VALUES", "RETURNING"])

/** A parenthesized group of tokens (or the whole statement), with the tokens at its own depth. */
interface Level {
  /** Index of its opening parenthesis; -1 for the statement. */
  readonly open: number
  readonly parent: Level | undefined
  /** Index of its closing parenthesis; the token count for the statement. */
  close: number
  readonly own: Array<number>
}

const levelsOf = (tokens: ReadonlyArray<Token>): Array<Level> => {
  const top: Level = { open: -1, parent: undefined, close: tokens.length, own: [] }
  const levels = [top]
  const stack = [top]
  tokens.forEach((token, i) => {
    if (token.text === "(" && token.kind === "punct") {
      stack.at(-1)!.own.push(i)
      const level: Level = { open: i, parent: stack.at(-1), close: tokens.length, own: [] }
      levels.push(level)
      stack.push(level)
    } else if (token.text === ")" && token.kind === "punct" && stack.length > 1) {
      stack.pop()!.close = i
      stack.at(-1)!.own.push(i)
    } else {
      stack.at(-1)!.own.push(i)
    }
  })
  return levels
}

/** SQLite answers a scalar subquery with its first row, however many it has. */
const isScalar = (tokens: ReadonlyArray<Token>, level: Level) => {
  const before = tokens[level.open - 1]
  if (before === undefined || level.parent === undefined) return true
  if (before.kind === "word") return !NOT_SCALAR.has(before.text)
  if (before.text !== ",") return true
  const clause = level.parent.own.findLast((i) => i < level.open && tokens[i]!.kind === "word" && CLAUSES.has(tokens[i]!.text))
  return clause === undefined || tokens[clause]!.text !== "FROM"
}

/** The name a function is called by, quoted or not (`"row_number"(…)` is row_number), upper-cased; undefined where no call follows. */
const calledAt = (sql: string, tokens: ReadonlyArray<Token>, i: number) => {
  const token = tokens[i]
  if (token === undefined || tokens[i + 1]?.text !== "(") return undefined
  if (token.kind === "word") return token.text
  return token.kind === "quoted" ? sql.slice(token.start + 1, token.end - 1).toUpperCase() : undefined
}

const word = (tokens: ReadonlyArray<Token>, i: number | undefined, text: string) => i !== undefined && tokens[i]?.kind === "word" && tokens[i]!.text === text

/** The number of columns a query yields, where the shape and the catalog tell; undefined otherwise. */
export const outputCount = (shape: QueryShape, columnsOf: (parts: ReadonlyArray<string>) => number | undefined, ctes: ReadonlyMap<string, number | undefined> = new Map()): number | undefined => {
  switch (shape.kind) {
    case "opaque":
      return undefined
    case "values":
      return shape.rows[0]?.length
    case "set":
    case "select": {
      const known = new Map(ctes)
      // An alias list may rename the first columns only: the count is the query's own.
      for (const cte of shape.ctes) known.set(cte.name.toLowerCase(), outputCount(cte.query, columnsOf, known))
      if (shape.kind === "set") return shape.arms[0] === undefined ? undefined : outputCount(shape.arms[0], columnsOf, known)
      const from = shape.from.map((item) => {
        if (item.kind === "other") return { alias: item.alias, count: undefined }
        if (item.kind === "query") return { alias: item.alias, count: outputCount(item.query, columnsOf, known) }
        const cte = item.parts.length === 1 ? item.parts[0]!.toLowerCase() : undefined
        return { alias: item.alias ?? item.parts.at(-1), count: cte !== undefined && known.has(cte) ? known.get(cte) : columnsOf(item.parts) }
      })
      let total = 0
      for (const item of shape.items) {
        if (item.kind !== "star") total += 1
        else {
          const over = item.qualifier === undefined ? from : from.filter((f) => f.alias?.toLowerCase() === item.qualifier!.toLowerCase())
          if (over.length === 0 || over.some((f) => f.count === undefined)) return undefined
          total += over.reduce((sum, f) => sum + f.count!, 0)
        }
      }
      return total
    }
  }
}

/** The statement in order, and what was put where (offsets in the text before). */
export interface Ordered {
  readonly sql: string
  readonly inserts: ReadonlyArray<{ readonly at: number; readonly text: string }>
}

const ordinals = (count: number) => Array.from({ length: count }, (_, i) => i + 1).join(", ")

/**
 * The statement with each level that returns or keeps rows in read order put in a total order of
 * its outputs; a refusal where a level's outputs cannot be counted or a function depends on the
 * order of ties. `outer`: the outer query's column count, where its select list has a `*`.
 */
export const inTotalOrder = (sql: string, profile: DialectProfile, outer: () => number | undefined): Either.Either<Ordered, Refusal> => {
  const dbType = profile.dbType
  const tokens = tokenize(sql, sessionLexical(profile))
  while (tokens.at(-1)?.text === ";") tokens.pop()
  const because = (reason: string, advice: string) => `${reason}, which can follow a masked value, over tables with PII rules: ${advice}`
  // `recorded`: the same refusal without the statement's words, where the reason quotes them (the token may be a string the database reads as a value).
  const refusal = (reason: string, advice: string, recorded?: readonly [string, string]) =>
    Either.left(new Refusal(because(reason, advice), recorded === undefined ? undefined : because(...recorded)))
  for (let i = 0; i < tokens.length; i++) {
    const called = calledAt(sql, tokens, i)
    const why = called === undefined ? undefined : ORDER_SENSITIVE.get(called)
    if (why !== undefined) return refusal(`${called!.toLowerCase()} gives a value that depends on the order rows are read in`, why)
    // A seeded random sequence gives each row its value by the order rows are read in.
    if ((called === "RAND" || called === "RANDOM") && tokens[i + 2]?.text !== ")") return refusal(`${called.toLowerCase()} with a seed gives each row a value by the order rows are read in`, "leave the seed out")
    if (word(tokens, i, "OVER") && tokens[i + 1]?.text !== "(") return refusal("a named window keeps tied rows in the order they are read in", "write the window in OVER (…)")
  }
  const inserts: Array<{ readonly at: number; readonly text: string }> = []
  const levels = levelsOf(tokens)
  const closedAt = new Map(levels.map((level) => [level.close, level]))
  for (const level of levels) {
    if (level.open > 0 && word(tokens, level.open - 1, "OVER")) {
      const window = windowInOrder(sql, tokens, level, closedAt)
      if (window !== undefined && "reason" in window) return refusal(window.reason, window.advice)
      if (window !== undefined) inserts.push(window)
      continue
    }
    const listing = level.open > 0 ? calledAt(sql, tokens, level.open - 1) : undefined
    if (listing !== undefined && LISTING_AGGREGATES.has(listing)) {
      const ordered = listedInOrder(sql, tokens, level, dbType === "mysql" && listing === "GROUP_CONCAT" ? Infinity : LISTING_AGGREGATES.get(listing)!)
      if (ordered === undefined) return refusal(`${listing.toLowerCase()} over a window lists rows in the order they are read in`, "aggregate with GROUP BY instead, where Sluice orders what it lists")
      inserts.push(ordered)
      continue
    }
    const own = level.own
    const select = own.find((i) => word(tokens, i, "SELECT"))
    const values = own.length > 0 && word(tokens, own[0], "VALUES")
    if (select === undefined && !values && level.open >= 0) continue
    const keeps = own.some((i) => ["LIMIT", "OFFSET", "FETCH", "TOP"].some((w) => word(tokens, i, w))) || (select !== undefined && word(tokens, select + 1, "DISTINCT") && word(tokens, select + 2, "ON"))
    if (select !== undefined && (dbType === "mysql" || dbType === "sqlite")) {
      const bare = bareColumn(sql, tokens, level, select)
      if (bare !== undefined) {
        const why = "is neither grouped nor aggregated: the database answers it from a row of the group it chooses by the order it reads rows in"
        return refusal(`${bare} ${why}`, `group by ${bare}, or aggregate it (min, max)`, [`a column ${why}`, "group by it, or aggregate it (min, max)"])
      }
    }
    const outermost = level.open < 0
    // ARRAY(SELECT …) lists the rows in the order they come.
    const listed = level.open > 0 && word(tokens, level.open - 1, "ARRAY")
    if (!outermost && !keeps && !listed && !(dbType === "sqlite" && isScalar(tokens, level))) continue
    const orderAt = own.findLastIndex((i, k) => word(tokens, i, "ORDER") && word(tokens, own[k + 1], "BY"))
    // DuckDB orders by every output column without counting them (a PIVOT's are known only when it runs).
    const all = dbType === "duckdb" && orderAt < 0
    const count = all ? 0 : values ? valuesWidth(tokens, own) : select !== undefined ? selectWidth(tokens, own, select, outermost ? outer : () => undefined) : outer()
    if (count === undefined) {
      return Either.left(
        new Refusal("Sluice puts rows read from tables with PII rules in an order of their own columns, and cannot count this query's columns: name them instead of using * (in a subquery with LIMIT, or over a join with USING or NATURAL)")
      )
    }
    // The clauses that follow ORDER BY come after the level's last set operation and select list.
    const from = Math.max(orderAt, own.findLastIndex((i) => ["UNION", "EXCEPT", "INTERSECT", "MINUS", "SELECT"].some((w) => word(tokens, i, w))))
    const endAt = own.findIndex((i, k) => k > from && tokens[i]!.kind === "word" && AFTER_ORDER_BY.has(tokens[i]!.text) && !isCall(tokens, i))
    const last = endAt >= 0 ? own[endAt - 1] : own.at(-1)
    if (last === undefined) continue
    inserts.push({ at: tokens[last]!.end, text: all ? " order by all" : orderAt >= 0 ? `, ${ordinals(count)}` : ` order by ${ordinals(count)}` })
  }
  let text = sql
  for (const insert of [...inserts].sort((a, b) => b.at - a.at)) text = text.slice(0, insert.at) + insert.text + text.slice(insert.at)
  return Either.right({ sql: text, inserts })
}

/**
 * A listing aggregate's arguments ordered by its values after its own keys: `string_agg(x, ',' order
 * by k)` lists as `… order by k, x`. Undefined for one over a window (`OVER`, `WITHIN GROUP`), whose
 * rows come in the window's order.
 */
const listedInOrder = (sql: string, tokens: ReadonlyArray<Token>, level: Level, valueArguments: number) => {
  let after = level.close + 1
  if (word(tokens, after, "FILTER") && tokens[after + 1]?.text === "(") after = tokens.findIndex((t, i) => i > after && t.text === ")" && t.kind === "punct") + 1
  if (word(tokens, after, "OVER") || word(tokens, after, "WITHIN")) return undefined
  const own = level.own
  const clause = own.findIndex((i, k) => (word(tokens, i, "ORDER") && word(tokens, own[k + 1], "BY")) || word(tokens, i, "SEPARATOR") || word(tokens, i, "LIMIT"))
  const args = clause >= 0 ? own.slice(0, clause) : own
  const commas = args.filter((i) => tokens[i]!.text === "," && tokens[i]!.kind === "punct")
  const valuesEnd = commas[valueArguments - 1]
  let first = level.open + 1
  while (word(tokens, first, "DISTINCT") || word(tokens, first, "ALL")) first++
  const lastValue = valuesEnd === undefined ? (args.at(-1) ?? level.open) : valuesEnd - 1
  const values = lastValue >= first ? sql.slice(tokens[first]!.start, tokens[lastValue]!.end) : undefined
  if (values === undefined) return undefined
  const ordered = clause >= 0 && word(tokens, own[clause], "ORDER")
  const end = ordered ? own.findIndex((i, k) => k > clause && (word(tokens, i, "SEPARATOR") || word(tokens, i, "LIMIT"))) : clause
  const at = end >= 0 ? tokens[own[end]! - 1]!.end : tokens[level.close - 1]!.end
  return { at, text: ordered ? `, ${values}` : ` order by ${values}` }
}

/** Where a level's select list starts in its own tokens: past SELECT and its modifiers (DISTINCT ON's parenthesized keys are a level of their own). */
const firstItem = (tokens: ReadonlyArray<Token>, own: ReadonlyArray<number>, select: number) => {
  let k = own.indexOf(select) + 1
  while (k < own.length && tokens[own[k]!]!.kind === "word" && SELECT_MODIFIERS.has(tokens[own[k]!]!.text)) {
    k += word(tokens, own[k], "DISTINCT") && word(tokens, own[k + 1], "ON") ? 3 : 1
  }
  return k
}

/** How many columns a level's select list yields: its items, with each `*` counted by `stars` (the outer query's shape), or undefined. */
const selectWidth = (tokens: ReadonlyArray<Token>, own: ReadonlyArray<number>, select: number, stars: () => number | undefined): number | undefined => {
  let k = firstItem(tokens, own, select)
  let items = 1
  let star = false
  for (; k < own.length; k++) {
    const token = tokens[own[k]!]!
    if (token.kind === "word" && AFTER_SELECT_LIST.has(token.text)) break
    if (token.text === "," && token.kind === "punct") items++
    if (token.text === "*" && token.kind === "punct") {
      const before = tokens[own[k - 1]!]
      if (before === undefined || (before.kind === "punct" && (before.text === "," || before.text === ".")) || word(tokens, own[k - 1], "SELECT") || SELECT_MODIFIERS.has(before.text)) star = true
    }
  }
  if (!star) return items
  const joinsByName = own.some((i) => word(tokens, i, "NATURAL") || (word(tokens, i, "USING") && tokens[i + 1]?.text === "("))
  return joinsByName ? undefined : stars()
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i)

/** Token index ranges [start, end) of the parts of `own` from `k` on, split at its commas, up to a word `stop` has. */
const partsOf = (tokens: ReadonlyArray<Token>, level: Level, k: number, stop: ReadonlySet<string>): Array<readonly [number, number]> => {
  const own = level.own
  const parts: Array<readonly [number, number]> = []
  let start = k
  for (; ; k++) {
    const i = own[k]
    const ends = i === undefined || (tokens[i]!.kind === "word" && stop.has(tokens[i]!.text) && tokens[i - 1]?.text !== ".")
    if (ends || (tokens[i]!.kind === "punct" && tokens[i]!.text === ",")) {
      if (k > start) parts.push([own[start]!, i ?? level.close])
      start = k + 1
    }
    if (ends) return parts
  }
}

/** Where a parenthesized group that opens at `open` closes. */
const closing = (tokens: ReadonlyArray<Token>, open: number) => {
  for (let i = open, depth = 0; i < tokens.length; i++) {
    if (tokens[i]!.kind !== "punct") continue
    if (tokens[i]!.text === "(") depth++
    else if (tokens[i]!.text === ")" && --depth === 0) return i
  }
  return tokens.length
}

/**
 * MySQL and SQLite let a grouped query return a column it neither groups by nor aggregates, from a
 * row of the group the engine meets first or last: the first such column's name, or undefined.
 * A select item passes as a GROUP BY key written alike (qualifiers aside), by its position or
 * alias, or where every column it reads outside aggregates and subqueries is a key.
 */
const bareColumn = (sql: string, tokens: ReadonlyArray<Token>, level: Level, select: number): string | undefined => {
  const own = level.own
  const items = partsOf(tokens, level, firstItem(tokens, own, select), AFTER_SELECT_LIST)
  const groupAt = own.findIndex((i, g) => word(tokens, i, "GROUP") && word(tokens, own[g + 1], "BY"))
  const isAggregate = (i: number) => AGGREGATES.has(calledAt(sql, tokens, i) ?? "") && !word(tokens, closing(tokens, i + 1) + 1, "OVER")
  const isSubquery = (i: number) => tokens[i]!.text === "(" && tokens[i]!.kind === "punct" && (word(tokens, i + 1, "SELECT") || word(tokens, i + 1, "WITH"))
  // An aggregate of the level itself, not of a subquery in it.
  const aggregates = ([a, b]: readonly [number, number]) => {
    for (let i = a; i < b; i++) {
      if (isSubquery(i)) i = closing(tokens, i)
      else if (isAggregate(i)) return true
    }
    return false
  }
  const grouped = groupAt >= 0 || own.some((i) => word(tokens, i, "HAVING")) || items.some(aggregates)
  if (!grouped) return undefined
  const name = (i: number) => (tokens[i]!.kind === "quoted" ? sql.slice(tokens[i]!.start + 1, tokens[i]!.end - 1) : tokens[i]!.kind === "word" ? tokens[i]!.text : sql.slice(tokens[i]!.start, tokens[i]!.end)).toUpperCase()
  // A column's name; not a keyword, nor the type word or character set of a typed literal (`date '2024-01-01'`, `_utf8mb4 'x'`), unless a qualifier makes it one (`t.date`).
  // Any other word before a string is a column the string names (`email 'e'`: MySQL and SQLite take a string as an alias).
  const typedLiteral = (i: number) => tokens[i + 1]?.kind === "string" && (LITERAL_TYPES.has(tokens[i]!.text) || tokens[i]!.text.startsWith("_"))
  const isName = (i: number) =>
    tokens[i]!.kind === "quoted" || (tokens[i]!.kind === "word" && (tokens[i - 1]?.text === "." || (!NOT_COLUMNS.has(tokens[i]!.text) && !typedLiteral(i))))
  // An expression's text without qualifiers: `s.country` reads as `country`.
  const textOf = (a: number, b: number) => range(a, b).filter((i) => tokens[i]!.text !== "." && tokens[i + 1]?.text !== ".").map(name).join(" ")
  const keys = groupAt >= 0 ? partsOf(tokens, level, groupAt + 2, AFTER_GROUP_BY) : []
  const keyTexts = new Set(keys.map(([a, b]) => textOf(a, b)))
  // The level's own tables and aliases: a subquery in a select item that reads `m.id` reads this level's row.
  const fromAt = own.findIndex((i) => word(tokens, i, "FROM"))
  const outerNames = new Set(fromAt < 0 ? [] : own.slice(fromAt + 1).filter(isName).map(name))
  const correlated = (a: number, b: number) => range(a, b).find((i) => isName(i) && outerNames.has(name(i)) && tokens[i + 1]?.text === "." && isName(i + 2) && !keyTexts.has(name(i + 2)))
  for (const [n, [a, b]] of items.entries()) {
    const end = beforeAlias(tokens, a, b)
    // Not by its alias: MySQL reads a GROUP BY name as a table's column before an alias.
    if (keyTexts.has(textOf(a, end)) || keyTexts.has(String(n + 1))) continue
    for (let i = a; i < end; i++) {
      if (isSubquery(i)) {
        const close = closing(tokens, i)
        const outer = correlated(i, close)
        if (outer !== undefined) return sql.slice(tokens[outer]!.start, tokens[outer + 2]!.end)
        i = close
      } else if (isAggregate(i)) i = closing(tokens, i + 1)
      else if (tokens[i]!.text === "*" && tokens[i]!.kind === "punct" && (i === a || tokens[i - 1]!.text === ".")) return "*"
      else if (isName(i) && tokens[i + 1]?.text !== "(" && tokens[i + 1]?.text !== "." && !word(tokens, i - 1, "AS") && !keyTexts.has(name(i))) return sql.slice(tokens[i]!.start, tokens[i]!.end)
    }
  }
  return undefined
}

/** Where a select item's expression ends: before `AS alias`, or an alias right after a name or a closing parenthesis. */
const beforeAlias = (tokens: ReadonlyArray<Token>, a: number, b: number) => {
  const named = (i: number) => tokens[i]!.kind === "quoted" || (tokens[i]!.kind === "word" && !NOT_COLUMNS.has(tokens[i]!.text))
  if (b - a >= 3 && word(tokens, b - 2, "AS")) return b - 2
  return b - a >= 2 && named(b - 1) && (named(b - 2) || tokens[b - 2]!.text === ")") && tokens[b - 2]!.text !== "." ? b - 1 : b
}

/**
 * A window put in a total order where its function numbers rows or reads them by position: its
 * ORDER BY gets, after the caller's keys, the expressions its query level outputs and the
 * function's own arguments. Rows that still tie look alike in everything the function and the
 * result can show. Aggregates and ranks over a RANGE or GROUPS frame take tied rows together and
 * are left as written (adding keys would change which rows tie).
 */
const windowInOrder = (sql: string, tokens: ReadonlyArray<Token>, spec: Level, closedAt: ReadonlyMap<number, Level>): { at: number; text: string } | { reason: string; advice: string } | undefined => {
  // The call before OVER: name(args) [FILTER (…)] [IGNORE|RESPECT NULLS].
  let c = spec.open - 2
  if (word(tokens, c, "NULLS")) c -= 2
  const filter = closedAt.get(c)
  if (filter !== undefined && word(tokens, filter.open - 1, "FILTER")) c = filter.open - 2
  const call = closedAt.get(c)
  const name = call === undefined ? undefined : calledAt(sql, tokens, call.open - 1)
  if (call === undefined || name === undefined) return { reason: "a window function Sluice cannot read keeps tied rows in the order they are read in", advice: "call it by its name" }
  const own = spec.own
  const first = own[0] === undefined ? undefined : tokens[own[0]]!
  if (first !== undefined && first.kind !== "punct" && !["PARTITION", "ORDER", ...FRAME_UNITS].some((w) => word(tokens, own[0], w))) {
    return { reason: "a window built on a named one keeps tied rows in the order they are read in", advice: "write the whole window in OVER (…)" }
  }
  const orderAt = own.findIndex((i, k) => word(tokens, i, "ORDER") && word(tokens, own[k + 1], "BY"))
  const frameAt = own.findIndex((i) => tokens[i]!.kind === "word" && FRAME_UNITS.has(tokens[i]!.text))
  const rowsFrame = frameAt >= 0 && word(tokens, own[frameAt], "ROWS")
  if (FRAME_VALUE.has(name) && !rowsFrame) {
    return { reason: `${name.toLowerCase()} over a RANGE, GROUPS or default frame takes a value from one of the rows that tie`, advice: "give it a ROWS frame (rows between unbounded preceding and current row)" }
  }
  if (!NUMBERING.has(name) && !FRAME_VALUE.has(name) && !rowsFrame) return undefined
  const owner = spec.parent!
  const select = owner.own.find((i) => word(tokens, i, "SELECT"))
  const literal = (a: number, b: number) => b === a + 1 && (tokens[a]!.kind === "number" || tokens[a]!.kind === "string")
  const keys: Array<string> = []
  if (select !== undefined) {
    for (const [a, b] of partsOf(tokens, owner, firstItem(tokens, owner.own, select), AFTER_SELECT_LIST)) {
      if (range(a, b).some((i) => word(tokens, i, "OVER"))) continue
      if (range(a, b).some((i) => tokens[i]!.text === "*" && tokens[i]!.kind === "punct" && (i === a || tokens[i - 1]!.text === "."))) {
        return { reason: `${name.toLowerCase()} takes tied rows in the order they are read in where Sluice cannot order them by the columns of a *`, advice: "name the query's columns" }
      }
      const end = beforeAlias(tokens, a, b)
      if (!literal(a, end)) keys.push(sql.slice(tokens[a]!.start, tokens[end - 1]!.end))
    }
  }
  const quantified = word(tokens, call.own[0], "DISTINCT") || word(tokens, call.own[0], "ALL")
  for (const [a, b] of partsOf(tokens, { ...call, own: call.own.slice(quantified ? 1 : 0) }, 0, new Set(["ORDER", "IGNORE", "RESPECT"]))) {
    if (!literal(a, b) && !(b === a + 1 && tokens[a]!.text === "*")) keys.push(sql.slice(tokens[a]!.start, tokens[b - 1]!.end))
  }
  if (keys.length === 0) return undefined
  if (orderAt >= 0) {
    const last = frameAt > orderAt ? own[frameAt - 1]! : own.at(-1)!
    return { at: tokens[last]!.end, text: `, ${keys.join(", ")}` }
  }
  const before = frameAt >= 0 ? (frameAt > 0 ? own[frameAt - 1]! : spec.open) : (own.at(-1) ?? spec.open)
  return { at: tokens[before]!.end, text: ` order by ${keys.join(", ")} ` }
}

/** A VALUES list's width: the items of its first row. */
const valuesWidth = (tokens: ReadonlyArray<Token>, own: ReadonlyArray<number>): number | undefined => {
  const open = own[1]
  if (open === undefined || tokens[open]!.text !== "(") return undefined
  let depth = 0
  let items = 1
  for (let i = open + 1; i < tokens.length; i++) {
    const text = tokens[i]!.kind === "punct" ? tokens[i]!.text : ""
    if (text === "(") depth++
    else if (text === ")" && depth-- === 0) return items
    else if (text === "," && depth === 0) items++
  }
  return undefined
}
