import fc from "fast-check"
import type { DbType } from "../../src/domain/Connection"
import { DANGEROUS, type DangerousFunction, type DangerousRelation } from "./corpus/Dangerous"

/**
 * fast-check grammars for the SQL guard and PII lineage fuzzers (GuardFuzz.test.ts): a dangerous
 * core wrapped in random contexts, each statement paired with a twin that puts a harmless core in
 * the very same context (so a refusal is the core's, not the context's); PII columns carried
 * through random query shapes; and plain reads of allow-listed functions over ordinary columns.
 */

interface Traits {
  readonly quote: (name: string) => string
  /** A type every text value casts to. */
  readonly text: string
  readonly colonCast: boolean
  readonly lateral: boolean
  readonly valuesAlias: boolean
  readonly recursive: boolean
  readonly explain: boolean
  readonly limit: boolean
  readonly dollarQuotes: boolean
  /** Where a harmless function sits unqualified: the twin of a schema-qualified dangerous call. */
  readonly builtinSchema: string | undefined
  readonly harmlessTable: string
  /** `array[x]` (PostgreSQL) or `[x]` (DuckDB) */
  readonly array: ((e: string) => string) | undefined
  /**
   * DuckDB's lambdas, PostgreSQL's DISTINCT ON and aggregate FILTER, MySQL's executable comments, a bare VALUES statement,
   * U&"…" names; flatComments: the engine's block comments do not nest, so a comment opened inside one does not hide
   * what follows its end.
   */
  readonly extras: ReadonlyArray<"lambda" | "distinctOn" | "filter" | "executableComments" | "values" | "unicodeNames" | "flatComments">
}

const double = (name: string) => `"${name}"`
const backtick = (name: string) => `\`${name}\``

const TRAITS: Record<DbType, Traits> = {
  postgresql: { quote: double, text: "text", colonCast: true, lateral: true, valuesAlias: true, recursive: true, explain: true, limit: true, dollarQuotes: true, builtinSchema: "pg_catalog", harmlessTable: "generate_series(1, 2) as t(a)", array: (e) => `array[${e}]`, extras: ["distinctOn", "filter", "values", "unicodeNames"] },
  redshift: { quote: double, text: "varchar", colonCast: true, lateral: true, valuesAlias: true, recursive: true, explain: true, limit: true, dollarQuotes: true, builtinSchema: "pg_catalog", harmlessTable: "generate_series(1, 2) as t(a)", array: (e) => `array[${e}]`, extras: ["distinctOn", "filter", "values", "unicodeNames"] },
  duckdb: { quote: double, text: "varchar", colonCast: true, lateral: true, valuesAlias: true, recursive: true, explain: true, limit: true, dollarQuotes: true, builtinSchema: "main", harmlessTable: "generate_series(1, 2) as t(a)", array: (e) => `[${e}]`, extras: ["lambda", "distinctOn", "filter", "values"] },
  mysql: { quote: backtick, text: "char", colonCast: false, lateral: false, valuesAlias: false, recursive: true, explain: true, limit: true, dollarQuotes: false, builtinSchema: undefined, harmlessTable: "json_table('[1]', '$[*]' columns (a int path '$')) as t", array: undefined, extras: ["executableComments", "flatComments"] },
  sqlite: { quote: double, text: "text", colonCast: false, lateral: false, valuesAlias: false, recursive: true, explain: false, limit: true, dollarQuotes: false, builtinSchema: undefined, harmlessTable: "json_each('[1]') as t", array: undefined, extras: ["filter", "values", "flatComments"] },
  mssql: { quote: (n) => `[${n}]`, text: "varchar(10)", colonCast: false, lateral: false, valuesAlias: false, recursive: false, explain: false, limit: false, dollarQuotes: false, builtinSchema: undefined, harmlessTable: "orders as t", array: undefined, extras: [] },
  snowflake: { quote: double, text: "varchar", colonCast: true, lateral: true, valuesAlias: false, recursive: true, explain: false, limit: true, dollarQuotes: false, builtinSchema: undefined, harmlessTable: "orders as t", array: undefined, extras: ["flatComments"] },
  bigquery: { quote: backtick, text: "string", colonCast: false, lateral: false, valuesAlias: false, recursive: true, explain: false, limit: true, dollarQuotes: false, builtinSchema: undefined, harmlessTable: "orders as t", array: undefined, extras: ["flatComments"] },
  clickhouse: { quote: backtick, text: "String", colonCast: true, lateral: false, valuesAlias: false, recursive: false, explain: false, limit: true, dollarQuotes: false, builtinSchema: undefined, harmlessTable: "numbers(2) as t", array: undefined, extras: [] },
  databricks: { quote: backtick, text: "string", colonCast: true, lateral: true, valuesAlias: false, recursive: false, explain: false, limit: true, dollarQuotes: false, builtinSchema: undefined, harmlessTable: "orders as t", array: undefined, extras: [] },
  trino: { quote: double, text: "varchar", colonCast: false, lateral: true, valuesAlias: false, recursive: true, explain: false, limit: true, dollarQuotes: false, builtinSchema: undefined, harmlessTable: "orders as t", array: undefined, extras: ["flatComments"] }
}

type Kind = "expr" | "from"
interface Piece {
  readonly kind: Kind
  readonly sql: string
}

/** A context taking a piece of one kind to a piece of another; undefined where the dialect cannot write it. */
type Wrapper = (inner: Piece, t: Traits) => Piece | undefined
const expr = (sql: string): Piece => ({ kind: "expr", sql })
const from = (sql: string): Piece => ({ kind: "from", sql })
const onExpr = (f: (e: string, t: Traits) => string | undefined): Wrapper => (p, t) => {
  if (p.kind !== "expr") return undefined
  const sql = f(p.sql, t)
  return sql === undefined ? undefined : expr(sql)
}
const onFrom = (f: (s: string, t: Traits) => Piece | undefined): Wrapper => (p, t) => (p.kind === "from" ? f(p.sql, t) : undefined)

const WRAPPERS: ReadonlyArray<Wrapper> = [
  // expression → expression: function arguments, casts, CASE, subqueries, windows (partitions)
  onExpr((e, t) => `lower(cast(${e} as ${t.text}))`),
  onExpr((e) => `coalesce(${e}, null)`),
  onExpr((e) => `case when ${e} is null then 1 else 2 end`),
  onExpr((e) => `case when 1 = 1 then ${e} end`),
  onExpr((e) => `(${e})`),
  onExpr((e) => `(select ${e})`),
  onExpr((e) => `(select ${e} from orders where id = 1)`),
  onExpr((e) => `nullif(${e}, null)`),
  onExpr((e) => `count(*) over (partition by ${e})`),
  onExpr((e) => `max(${e}) over (partition by id order by id)`),
  onExpr((e) => `(${e} is not null)`),
  onExpr((e, t) => (t.colonCast ? `${e}::${t.text}` : `cast(${e} as ${t.text})`)),
  onExpr((e) => `/*a*/ ${e} /*b*/`),
  onExpr((e) => `(${e} ||'x')`),
  onExpr((e) => `(${e} between 1 and 2)`),
  onExpr((e) => `1 in (2, ${e})`),
  onExpr((e, t) => t.array?.(e)),
  onExpr((e, t) => (t.extras.includes("lambda") ? `list_transform([1], v -> ${e})` : undefined)),
  onExpr((e, t) => (t.extras.includes("filter") ? `count(*) filter (where ${e} is null)` : undefined)),
  onExpr((e, t) => executableComment("/*!", e, t)),
  onExpr((e, t) => executableComment("/*!50000", e, t)),
  onExpr((e, t) => executableComment("/*!40101", e, t)),
  // FROM item → FROM item: derived tables, joins, LATERAL
  onFrom((f) => from(`(select * from ${f}) as d`)),
  onFrom((f) => from(`(select * from orders as o cross join ${f}) as j`)),
  onFrom((f) => from(`(select * from orders as o join ${f} on 1 = 1) as j`)),
  onFrom((f, t) => (t.lateral ? from(`(select * from orders as o, lateral (select * from ${f}) as l) as j`) : undefined)),
  // FROM item → expression: scalar subquery, EXISTS, IN
  onFrom((f) => expr(`(select count(*) from ${f})`)),
  onFrom((f) => expr(`exists (select 1 from ${f})`)),
  onFrom((f) => expr(`1 in (select 1 from ${f})`)),
  // expression → FROM item
  (p) => (p.kind === "expr" ? from(`(select ${p.sql} as x) as d`) : undefined),
  (p) => (p.kind === "expr" ? from(`(select ${p.sql} as x from orders) as d`) : undefined),
  (p, t) => (p.kind === "expr" && t.lateral ? from(`(select * from orders as o, lateral (select ${p.sql} as x) as l) as d`) : undefined),
  (p, t) => (p.kind === "expr" && t.valuesAlias ? from(`(values (${p.sql})) as v(x)`) : undefined)
]

/** A whole statement around a piece; `write` ones are refused whatever they hold, so they have no twin. */
interface Statement {
  readonly write?: boolean
  readonly render: (p: Piece, t: Traits) => string | undefined
}
const exprStatement = (f: (e: string, t: Traits) => string | undefined): Statement => ({ render: (p, t) => (p.kind === "expr" ? f(p.sql, t) : undefined) })
const fromStatement = (f: (s: string, t: Traits) => string | undefined): Statement => ({ render: (p, t) => (p.kind === "from" ? f(p.sql, t) : undefined) })

const STATEMENTS: ReadonlyArray<Statement> = [
  exprStatement((e) => `select ${e}`),
  exprStatement((e) => `select id, ${e} as x from orders`),
  exprStatement((e) => `select * from orders where ${e} is not null`),
  exprStatement((e) => `select id from orders group by id having count(${e}) > 0`),
  exprStatement((e) => `select id from orders order by ${e}`),
  exprStatement((e) => `select ${e} union all select 1`),
  exprStatement((e) => `select 1 union select ${e}`),
  exprStatement((e) => `with c as (select ${e} as x) select * from c`),
  exprStatement((e) => `with a as (select 1 as one), c as (select ${e} as x) select * from a, c`),
  exprStatement((e) => `with c as (select ${e} as x), a as (select 1 as one) select * from a`),
  exprStatement((e, t) => (t.recursive ? `with recursive r (n) as (select 1 union all select n + 1 from r where n < 3) select n, ${e} from r` : undefined)),
  exprStatement((e, t) => (t.recursive ? `with recursive r (n) as (select 1 union all select n + 1 from r where ${e} is null) select n from r` : undefined)),
  exprStatement((e) => `select count(*) over (partition by ${e}) from orders`),
  exprStatement((e) => `select * from orders where id in (select ${e})`),
  exprStatement((e, t) => (t.explain ? `explain select ${e}` : undefined)),
  exprStatement((e) => `select * from orders as o join orders as p on ${e}`),
  exprStatement((e, t) => (t.extras.includes("flatComments") ? `select 1 /*${KEEP}/*${KEEP}*/ , ${e} --${KEEP}*/` : undefined)),
  exprStatement((e) => `select id from orders where id = 1 or ${e} is null`),
  exprStatement((e, t) => (t.extras.includes("values") ? `values (${e})` : undefined)),
  exprStatement((e, t) => (t.extras.includes("distinctOn") ? `select distinct on (${e}) id from orders` : undefined)),
  exprStatement((e, t) => (t.array !== undefined && t.builtinSchema !== undefined ? `select * from unnest(${t.array(e)}) as u` : undefined)),
  { write: true, render: (p) => (p.kind === "expr" ? `create view v as select ${p.sql}` : `create view v as select * from ${p.sql}`) },
  fromStatement((f) => `select * from ${f}`),
  fromStatement((f) => `select count(*) from ${f}`),
  fromStatement((f) => `with c as (select * from ${f}) select * from c`),
  fromStatement((f) => `with a as (select 1 as one), c as (select * from ${f}) select * from a`),
  fromStatement((f, t) => (t.recursive ? `with recursive r (n) as (select 1 union all select n + 1 from r, ${f} where n < 3) select * from r` : undefined)),
  fromStatement((f) => `select * from orders union all select * from ${f}`),
  fromStatement((f) => `select * from orders where exists (select 1 from ${f})`),
  fromStatement((f, t) => (t.extras.includes("flatComments") ? `select 1 /*${KEEP}/*${KEEP}*/ from ${f} --${KEEP}*/` : undefined))
]

/** Separators a space may become: whitespace and comments between any two tokens. */
const SEPARATORS = [" ", " ", " ", "\n", "\t", "  ", "/**/", "/* x */", "-- x\n"]

/** A space no separator replaces (inside a comment opener, where a separator would end the comment early). */
const KEEP = "\u0001"

/**
 * MySQL's executable comment around an expression. Comments do not nest in MySQL: a comment inside
 * would end it early, so the expression keeps its spaces and holds no comment of its own.
 */
function executableComment(opener: string, e: string, t: { readonly extras: ReadonlyArray<string> }) {
  return t.extras.includes("executableComments") && !e.includes("/*") && !e.includes("--") ? `${opener}${KEEP}${e.replaceAll(" ", KEEP)}*/` : undefined
}

const spaced = (sql: string, separators: ReadonlyArray<string>) => {
  let i = 0
  return sql.replace(/ /g, () => separators[i++ % separators.length]!).replaceAll(KEEP, " ")
}

const CASINGS: ReadonlyArray<(w: string) => string> = [
  (w) => w,
  (w) => w.toUpperCase(),
  (w) => [...w].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join("")
]

/** How a dangerous function's name is written; the twin writes `lower` the same way. */
type NameForm = "plain" | "cased" | "quoted" | "qualified" | "quotedQualified" | "spacedQualified" | "unicode" | "method"
const NAME_FORMS: ReadonlyArray<NameForm> = ["plain", "cased", "quoted", "qualified", "quotedQualified", "spacedQualified", "unicode", "method"]

/** PostgreSQL's U&"…" identifier, every letter after the first escaped. */
const unicodeName = (name: string) => `U&"${[...name].map((c, i) => (i === 0 ? c : `\\${c.charCodeAt(0).toString(16).padStart(4, "0")}`)).join("")}"`

/** The first top-level argument and the rest. */
const splitFirst = (args: string): [string, string] => {
  let depth = 0
  let quoted = false
  for (let i = 0; i < args.length; i++) {
    const c = args[i]
    if (c === "'" || args.startsWith("$q$", i)) quoted = !quoted
    else if (!quoted && c === "(") depth++
    else if (!quoted && c === ")") depth--
    else if (!quoted && depth === 0 && c === ",") return [args.slice(0, i), args.slice(i + 1).trim()]
  }
  return [args, ""]
}

const callOf = (name: string, schema: string | undefined, args: string, form: NameForm, casing: (w: string) => string, t: Traits, dbType: DbType, asFrom: boolean) => {
  switch (form) {
    case "plain":
      return `${name}(${args})`
    case "cased":
      return `${casing(name)}(${args})`
    case "quoted":
      return `${t.quote(name)}(${args})`
    case "qualified":
      return schema === undefined ? `${casing(name)}(${args})` : `${casing(schema)}.${casing(name)}(${args})`
    case "quotedQualified":
      return schema === undefined ? `${t.quote(name)}(${args})` : `${t.quote(schema)}.${t.quote(name)}(${args})`
    case "spacedQualified":
      return schema === undefined || t.builtinSchema !== "pg_catalog" ? `${name} (${args})` : `${schema} . ${name} (${args})`
    case "unicode":
      return t.extras.includes("unicodeNames") ? `${unicodeName(name)}(${args})` : `${name}(${args})`
    case "method": {
      if (dbType !== "duckdb" || args === "" || asFrom) return `${name}(${args})`
      const [first, rest] = splitFirst(args)
      return `(${first}).${name}(${rest})`
    }
  }
}

export interface Plan {
  readonly dbType: DbType
  readonly core: { readonly kind: "function"; readonly fn: DangerousFunction } | { readonly kind: "relation"; readonly rel: DangerousRelation }
  readonly placeAsFrom: boolean
  readonly form: NameForm
  readonly casing: (w: string) => string
  readonly schemaPick: number
  readonly wrappers: ReadonlyArray<number>
  readonly statement: number
  readonly separators: ReadonlyArray<string>
}

const relationOf = (rel: DangerousRelation, form: NameForm, casing: (w: string) => string, schemaPick: number, t: Traits) => {
  const qualify = (form === "qualified" || form === "quotedQualified" || form === "spacedQualified") && rel.schemas.length > 0
  const parts = qualify ? [rel.schemas[schemaPick % rel.schemas.length]!, ...rel.parts] : rel.parts
  if (form === "quoted" || form === "quotedQualified") return parts.map(t.quote).join(".")
  if (form === "unicode" && t.extras.includes("unicodeNames")) return parts.map(unicodeName).join(".")
  if (form === "cased") return parts.map(casing).join(".")
  return parts.join(form === "spacedQualified" ? " . " : ".")
}

/** Renders a plan around its dangerous core, or (twin) around a harmless one; undefined when the dialect cannot write this context. */
export const render = (plan: Plan, twin: boolean): string | undefined => {
  const t = TRAITS[plan.dbType]
  let piece: Piece
  if (plan.core.kind === "relation") {
    const name = twin ? "orders" : relationOf(plan.core.rel, plan.form, plan.casing, plan.schemaPick, t)
    piece = from(`${name} as r`)
  } else {
    const fn = plan.core.fn
    const schema = twin ? t.builtinSchema : fn.schemas.length === 0 ? undefined : fn.schemas[plan.schemaPick % fn.schemas.length]
    if (twin) piece = plan.placeAsFrom ? from(t.harmlessTable) : expr(callOf("lower", schema, "'x'", plan.form, plan.casing, t, plan.dbType, false))
    else {
      const call = callOf(fn.name, schema, fn.args, plan.form, plan.casing, t, plan.dbType, plan.placeAsFrom)
      piece = plan.placeAsFrom ? from(`${call} as ${fn.alias ?? "t"}`) : expr(call)
    }
  }
  for (const w of plan.wrappers) piece = WRAPPERS[w % WRAPPERS.length]!(piece, t) ?? piece
  const statement = STATEMENTS[plan.statement % STATEMENTS.length]!
  if (twin && statement.write) return undefined
  const sql = statement.render(piece, t) ?? (piece.kind === "expr" ? `select ${piece.sql}` : `select * from ${piece.sql}`)
  return spaced(sql, plan.separators)
}

const literal = (sql: string, dollar: boolean) => (dollar ? `$q$${sql}$q$` : `'${sql.replaceAll("'", "''")}'`)

/** Plans of attacks for one dialect; an executor's argument is itself an attack or a plain statement. */
export const attackPlan = (dbType: DbType): fc.Arbitrary<Plan> => {
  const cores = DANGEROUS[dbType]
  const t = TRAITS[dbType]
  const plain = (core: fc.Arbitrary<Plan["core"]>) =>
    fc.record({
      dbType: fc.constant(dbType),
      core,
      placeAsFrom: fc.boolean(),
      form: fc.constantFrom(...NAME_FORMS),
      casing: fc.constantFrom(...CASINGS),
      schemaPick: fc.nat(3),
      wrappers: fc.array(fc.nat(WRAPPERS.length - 1), { maxLength: 4 }),
      statement: fc.nat(STATEMENTS.length - 1),
      separators: fc.array(fc.constantFrom(...SEPARATORS), { minLength: 1, maxLength: 12 })
    })
  const direct = plain(
    fc.oneof(
      fc.constantFrom(...cores.functions).map((fn) => ({ kind: "function" as const, fn })),
      fc.constantFrom(...cores.relations).map((rel) => ({ kind: "relation" as const, rel }))
    )
  )
  if (cores.executors.length === 0) return direct
  const innerSql = fc.oneof(
    fc.constantFrom("select * from canary", "delete from canary", "select 1"),
    direct.map((p) => render(p, false)!)
  )
  const executed = fc
    .tuple(fc.constantFrom(...cores.executors), innerSql, fc.boolean())
    .map(([executor, sql, dollar]) => ({ kind: "function" as const, fn: executor(literal(sql, dollar && t.dollarQuotes && !sql.includes("$q$"))) }))
  return fc.oneof(direct, plain(executed))
}

// ---------------------------------------------------------------------------------------------
// PII: a query whose output column `p` carries a PII column's value, and `id` beside it.

export type PiiDialect = "postgresql" | "duckdb" | "mysql" | "sqlite"
export const PII_COLUMNS = ["email", "ssn", "phone"] as const

type Q = (q: string) => string | undefined
interface PiiTraits {
  readonly tables: ReadonlyArray<string>
  readonly columnForms: ReadonlyArray<(c: string) => string>
  readonly text: string
  readonly valueWrappers: ReadonlyArray<(x: string) => string>
  readonly lateral: boolean
  readonly values: boolean
  readonly aliasColumns: boolean
  /** The whole row of a relation as one value (`(d.*)::text`, DuckDB's `d::varchar`). */
  readonly wholeRow: ((alias: string) => string) | undefined
  /** LIMIT and OFFSET take an expression (a subquery): the row count can carry a value. */
  readonly limitExpressions: boolean
}

const COMMON_VALUE_WRAPPERS: ReadonlyArray<(x: string) => string> = [
  (x) => x,
  (x) => `lower(${x})`,
  (x) => `upper(${x})`,
  (x) => `trim(${x})`,
  (x) => `coalesce(${x}, 'n')`,
  (x) => `nullif(${x}, '')`,
  (x) => `concat(${x}, '')`,
  (x) => `substring(${x}, 1)`,
  (x) => `replace(${x}, 'a', 'a')`,
  (x) => `case when 1 = 1 then ${x} end`,
  (x) => `case ${x} when 'z' then 'z' else ${x} end`,
  (x) => `(select ${x})`,
  (x) => `max(${x}) over (partition by 1)`,
  (x) => `lag(${x}, 0) over (order by id)`,
  // Over PII, first_value needs a ROWS frame (a RANGE frame ends at the current row's last tie).
  (x) => `first_value(${x}) over (order by id rows between unbounded preceding and current row)`,
  (x) => `max(${x}) over (partition by id order by id range between unbounded preceding and current row)`,
  (x) => `greatest(${x}, '')`
]

const PII_TRAITS: Record<PiiDialect, PiiTraits> = {
  postgresql: {
    tables: ["customers", "public.customers", "CUSTOMERS", '"customers"'],
    columnForms: [(c) => c, (c) => c.toUpperCase(), (c) => `"${c}"`],
    text: "text",
    valueWrappers: [
      ...COMMON_VALUE_WRAPPERS,
      (x) => `cast(${x} as text)`,
      (x) => `${x}::text`,
      (x) => `${x} || ''`,
      (x) => `(array[${x}])[1]`,
      (x) => `array_to_string(array[${x}], ',')`,
      (x) => `format('%s', ${x})`,
      (x) => `${x} collate "C"`,
      (x) => `overlay(${x} placing '' from 1 for 0)`,
      (x) => `trim(both from ${x})`,
      (x) => `substring(${x} from 1)`,
      (x) => `xmlelement(name a, ${x})::text`,
      (x) => `json_build_object('a', ${x}) ->> 'a'`,
      (x) => `row(${x})::text`,
      (x) => `(select string_agg(v, ',') from (values (${x})) as s (v))`
    ],
    lateral: true,
    values: true,
    aliasColumns: true,
    wholeRow: (alias) => `(${alias}.*)::text`,
    limitExpressions: true
  },
  duckdb: {
    tables: ["customers", "main.customers", "CUSTOMERS", '"Customers"'],
    columnForms: [(c) => c, (c) => c.toUpperCase(), (c) => `"${c}"`, (c) => `"${c.toUpperCase()}"`],
    text: "varchar",
    valueWrappers: [
      ...COMMON_VALUE_WRAPPERS,
      (x) => `cast(${x} as varchar)`,
      (x) => `${x}::varchar`,
      (x) => `${x} || ''`,
      (x) => `[${x}][1]`,
      (x) => `list_extract([${x}], 1)`,
      (x) => `{'a': ${x}}.a`,
      (x) => `struct_pack(a := ${x}).a`,
      (x) => `(${x}).lower()`,
      (x) => `${x} collate nocase`,
      (x) => `(select string_agg(v, ',') from (values (${x})) as s (v))`,
      (x) => `list_transform([${x}], v -> v)[1]`
    ],
    lateral: true,
    values: true,
    aliasColumns: true,
    wholeRow: (alias) => `${alias}::varchar`,
    limitExpressions: true
  },
  mysql: {
    tables: ["customers", "shop.customers", "`customers`"],
    columnForms: [(c) => c, (c) => c.toUpperCase(), (c) => `\`${c}\``, (c) => `\`${c.toUpperCase()}\``],
    text: "char",
    valueWrappers: [
      ...COMMON_VALUE_WRAPPERS,
      (x) => `cast(${x} as char)`,
      (x) => `convert(${x} using utf8mb4)`,
      (x) => `convert(${x}, char)`,
      (x) => `concat_ws('', ${x})`,
      (x) => `if(1 = 1, ${x}, null)`,
      (x) => `ifnull(${x}, '')`,
      (x) => `elt(1, ${x})`,
      (x) => `json_unquote(json_extract(json_object('a', ${x}), '$.a'))`,
      (x) => `${x} collate utf8mb4_bin`,
      (x) => `trim(both ' ' from ${x})`,
      (x) => `substring(${x} from 1)`,
      (x) => `binary ${x}`
    ],
    lateral: false,
    values: false,
    aliasColumns: false,
    wholeRow: undefined,
    limitExpressions: false
  },
  sqlite: {
    tables: ["customers", "main.customers", '"customers"', "[customers]"],
    columnForms: [(c) => c, (c) => c.toUpperCase(), (c) => `"${c}"`, (c) => `[${c}]`],
    text: "text",
    valueWrappers: [
      ...COMMON_VALUE_WRAPPERS.filter((w) => !w("x").startsWith("greatest")),
      (x) => `cast(${x} as text)`,
      (x) => `${x} || ''`,
      (x) => `printf('%s', ${x})`,
      (x) => `json_extract(json_object('a', ${x}), '$.a')`,
      (x) => `substr(${x}, 1)`,
      (x) => `ifnull(${x}, '')`,
      (x) => `iif(1 = 1, ${x}, null)`,
      (x) => `${x} collate nocase`
    ],
    lateral: false,
    values: false,
    aliasColumns: false,
    wholeRow: undefined,
    limitExpressions: true
  }
}

export interface PiiPlan {
  readonly dbType: PiiDialect
  readonly column: (typeof PII_COLUMNS)[number]
  readonly table: string
  readonly columnForm: number
  readonly qualified: boolean
  readonly value: number
  readonly shapes: ReadonlyArray<number>
  readonly outerValue: number
}

const piiShapes = (dbType: PiiDialect, t: PiiTraits, wrap: (x: string) => string): ReadonlyArray<Q> => [
  (q) => `select d.p, d.id from (${q}) as d`,
  (q) => `with w as (${q}) select p, id from w`,
  (q) => `with w (a, b) as (${q}) select a as p, b as id from w`,
  (q) => `with w1 as (${q}), w2 as (select p as p, id from w1) select p, id from w2`,
  (q) => `with w0 as (select 1 as one), w1 as (${q}) select w1.p, w1.id from w0, w1`,
  (q) => `select 'a' as p, 0 as id union all select p, id from (${q}) as d`,
  (q) => `select p, id from (${q}) as d union select 'a', 0`,
  (q) => `select (select d.p) as p, d.id from (${q}) as d`,
  (q) => `select (select d.p from (${q}) as d where d.id = o.id) as p, o.id from orders as o`,
  (q) => `select max(d.p) over (partition by d.id) as p, d.id from (${q}) as d`,
  (q) => `select max(p) as p, id from (${q}) as d group by id`,
  (q) => `select d.p, o.id from orders as o join (${q}) as d on d.id = o.id`,
  (q) => `select ${wrap("d.p")} as p, d.id from (${q}) as d`,
  (q) => `select p, id from (${q}) as d where id in (select id from orders)`,
  (q) => `select p, id from (${q}) as d order by id limit 10`,
  (q) => (t.aliasColumns ? `select d.a as p, d.b as id from (${q}) as d (a, b)` : undefined),
  (q) => (t.lateral ? `select l.p, d.id from (${q}) as d, lateral (select d.p as p) as l` : undefined),
  (q) => (t.lateral ? `select l.p, d.id from (${q}) as d cross join lateral (select upper(d.p) as p) as l` : undefined),
  (q) => (t.values ? `select v.p, d.id from (${q}) as d, lateral (values (d.p)) as v (p)` : undefined),
  (q) => (dbType === "postgresql" ? `select array(select d.p from (${q}) as d) as p, 1 as id` : undefined),
  (q) => (dbType === "postgresql" ? `select u.p, d.id from (${q}) as d, unnest(array[d.p]) as u (p)` : undefined),
  (q) => (dbType === "duckdb" ? `select u.p, d.id from (${q}) as d, unnest([d.p]) as u (p)` : undefined),
  (q) => (dbType === "mysql" ? `select j.p, d.id from (${q}) as d, json_table(json_array(d.p), '$[*]' columns (p varchar(200) path '$')) as j` : undefined),
  (q) => (dbType === "sqlite" ? undefined : `select * from (values ((select d.p from (${q}) as d limit 1), 0)) as v`),
  (q) => (t.values ? `select v.p, v.id from (values ('a', 0)) as v (p, id) union all select p, id from (${q}) as d` : undefined),
  // The value computed with, not only carried: ordering, comparing, ranking, counting, casting the whole row, as row counts.
  // Patterns and bounds tell kinds of masked values apart, never the characters of a hash: an HMAC's characters say nothing of the value, but differ with it.
  (q) => `select p, id from (${q}) as d order by p, id`,
  (q) => `select d.p, d.id from (${q}) as d where d.p < 'm' or d.p is null`,
  (q) => `select d.p, (select count(*) from (${q}) as e where e.p < d.p) as id from (${q}) as d`,
  (q) => `select p, rank() over (order by p, id) as id from (${q}) as d`,
  (q) => `select p, row_number() over (partition by p order by id) as id from (${q}) as d`,
  (q) => `select max(d.p) as p, count(distinct d.p) as id from (${q}) as d where d.p like '%*%'`,
  (q) => `select max(d.p) as p, min(d.p) as id from (${q}) as d`,
  (q) => (t.wholeRow === undefined ? undefined : `select ${t.wholeRow("d")} as p, d.id from (${q}) as d`),
  (q) => (t.limitExpressions ? `select p, id from (${q}) as d order by id limit (select count(*) from (${q}) as e where e.p < 'm')` : undefined),
  (q) => (t.limitExpressions ? `select p, id from (${q}) as d order by id limit 10 offset (select count(*) from (${q}) as e where e.p like '%.%')` : undefined)
]

/** The SQL of a PII plan: its output columns are `p` (carrying the PII value) and `id`. */
export const renderPii = (plan: PiiPlan): string => {
  const t = PII_TRAITS[plan.dbType]
  const columnForm = t.columnForms[plan.columnForm % t.columnForms.length]!
  const ref = (c: string) => (plan.qualified ? `c.${columnForm(c)}` : columnForm(c))
  const wrap = t.valueWrappers[plan.value % t.valueWrappers.length]!
  const outer = t.valueWrappers[plan.outerValue % t.valueWrappers.length]!
  let sql = `select ${wrap(ref(plan.column))} as p, ${ref("id")} as id from ${plan.table}${plan.qualified ? " as c" : ""}`
  const shapes = piiShapes(plan.dbType, t, outer)
  for (const s of plan.shapes) sql = shapes[s % shapes.length]!(sql) ?? sql
  return sql
}

export const piiPlan = (dbType: PiiDialect): fc.Arbitrary<PiiPlan> =>
  fc.record({
    dbType: fc.constant(dbType),
    column: fc.constantFrom(...PII_COLUMNS),
    table: fc.constantFrom(...PII_TRAITS[dbType].tables),
    columnForm: fc.nat(10),
    qualified: fc.boolean(),
    value: fc.nat(60),
    shapes: fc.array(fc.nat(40), { maxLength: 4 }),
    outerValue: fc.nat(60)
  })

// ---------------------------------------------------------------------------------------------
// Reads: allow-listed functions over ordinary columns, in constructs every engine parses.

export type ReadDialect = "postgresql" | "redshift" | "duckdb" | "mysql" | "sqlite"

const READ_TEXT: Record<ReadDialect, string> = { postgresql: "text", redshift: "varchar", duckdb: "varchar", mysql: "char", sqlite: "text" }

/** Functions on every read dialect's allow-list, with how they are called on a value. */
const NUMERIC_FUNCTIONS: ReadonlyArray<(x: string) => string> = [(x) => `abs(${x})`, (x) => `round(${x})`, (x) => `coalesce(${x}, 0)`, (x) => `nullif(${x}, 0)`, (x) => `(${x} + 1)`]
const TEXT_FUNCTIONS: ReadonlyArray<(x: string) => string> = [
  (x) => `lower(${x})`,
  (x) => `upper(${x})`,
  (x) => `trim(${x})`,
  (x) => `replace(${x}, 'a', 'b')`,
  (x) => `substr(${x}, 1, 2)`,
  (x) => `coalesce(${x}, '')`,
  (x) => `ltrim(${x})`,
  (x) => `rtrim(${x})`
]
const AGGREGATES = ["count", "max", "min", "sum", "avg"]

const numeric = (dbType: ReadDialect, depth: number): fc.Arbitrary<string> =>
  depth === 0
    ? fc.constantFrom("id", "total", "customer_id", "1", "2.5")
    : fc.oneof(
        numeric(dbType, depth - 1),
        fc.tuple(fc.constantFrom(...NUMERIC_FUNCTIONS), numeric(dbType, depth - 1)).map(([f, x]) => f(x)),
        text(dbType, depth - 1).map((x) => `length(${x})`),
        fc.tuple(numeric(dbType, depth - 1), numeric(dbType, depth - 1)).map(([a, b]) => `case when ${a} > ${b} then ${a} else ${b} end`)
      )

const text = (dbType: ReadDialect, depth: number): fc.Arbitrary<string> => {
  return depth === 0
    ? fc.constantFrom("status", "'abc'")
    : fc.oneof(text(dbType, depth - 1), fc.tuple(fc.constantFrom(...TEXT_FUNCTIONS), text(dbType, depth - 1)).map(([f, x]) => f(x)))
}

export const readOf = (dbType: ReadDialect): fc.Arbitrary<string> => {
  const value = fc.oneof(numeric(dbType, 3), text(dbType, 3), numeric(dbType, 2).map((x) => `cast(${x} as ${READ_TEXT[dbType]})`))
  const condition = fc.tuple(numeric(dbType, 2), fc.constantFrom("=", "<", ">=", "<>"), numeric(dbType, 1)).map(([a, op, b]) => `${a} ${op} ${b}`)
  const select = fc
    .record({
      items: fc.array(value, { minLength: 1, maxLength: 3 }),
      where: fc.option(condition),
      aggregate: fc.option(fc.tuple(fc.constantFrom(...AGGREGATES), numeric(dbType, 2))),
      order: fc.boolean(),
      limit: fc.option(fc.integer({ min: 1, max: 50 }))
    })
    .map(({ items, where, aggregate, order, limit }) => {
      const list = aggregate === null ? items.map((v, i) => `${v} as c${i}`).join(", ") : `${aggregate[0]}(${aggregate[1]}) as c0`
      return `select ${list} from orders${where === null ? "" : ` where ${where}`}${order && aggregate === null ? " order by 1" : ""}${limit === null ? "" : ` limit ${limit}`}`
    })
  const wrapped = fc.tuple(select, fc.nat(6), condition).map(([s, how, cond]) => {
    const bare = s.replace(/ limit \d+$/, "").replace(/ order by 1$/, "")
    switch (how) {
      case 0:
        return `select * from (${bare}) as d`
      case 1:
        return `with w as (${bare}) select * from w`
      case 2:
        return `${bare} union all ${bare}`
      case 3:
        return `select id, (select count(*) from customers where customers.id = orders.customer_id) as n from orders where ${cond}`
      case 4:
        return `select id from orders where exists (select 1 from customers where customers.id = orders.customer_id and ${cond})`
      case 5:
        return `select id, row_number() over (partition by customer_id order by id) as n from orders`
      default:
        return s
    }
  })
  return wrapped
}
