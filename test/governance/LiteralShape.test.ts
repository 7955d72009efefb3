import { loadModule, parseSync } from "libpg-query"
import { beforeAll, describe, expect, it } from "vitest"
import { classifyDbtSql } from "../../src/governance/sqlguard/DbtStatements"
import { literalShape } from "../../src/governance/sqlguard/LiteralShape"

// A small deterministic generator, so a failure can be replayed.
const random = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}

/** A parse tree with its constants' values and every location left out: what two texts of one shape must share. */
const structureOf = (sql: string, constants: ReadonlySet<string>): unknown => {
  let tree: unknown
  try {
    tree = parseSync(sql)
  } catch {
    return "syntax error"
  }
  const strip = (value: unknown, key = ""): unknown => {
    if (Array.isArray(value)) return value.map((item) => strip(item))
    if (typeof value === "number") return "#"
    if (typeof value === "string") return constants.has(value) ? "S" : value
    if (typeof value !== "object" || value === null) return value
    const node = value as Record<string, unknown>
    if (key === "A_Const") return Object.keys(node).filter((k) => k !== "location").sort()
    return Object.fromEntries(Object.entries(node).filter(([k]) => !/location|stmt_len/.test(k)).map(([k, v]) => [k, strip(v, k)]))
  }
  return strip(tree)
}

// Constant values that a lexer reading them wrongly would take for code.
const TRICKY_STRINGS = ["", "x", "it''s", "'';drop table t;--", "a\\", "\\'", "$$", "/*", "*/", "--", "é😀", ";", "\"", "E'", "0", "' || (select 1) || '"]

const stringConstant = (next: () => number) => `'${TRICKY_STRINGS[Math.floor(next() * TRICKY_STRINGS.length)]!.replaceAll("'", "''")}'`
const integerConstant = (next: () => number) => String(Math.floor(next() * 1_000_000_000))

/** A template's two fillings with different constants. */
const fill = (template: string, next: () => number) => {
  const strings = new Set<string>()
  const text = template.replace(/\{S\}|\{N\}/g, (slot) => {
    if (slot === "{N}") return integerConstant(next)
    const constant = stringConstant(next)
    strings.add(constant.slice(1, -1).replaceAll("''", "'"))
    return constant
  })
  return { text, strings }
}

describe("literal shapes: the dbt proxy's verdicts shared by statements that differ only in constants", () => {
  beforeAll(() => loadModule())

  it("replaces plain string and small integer constants, and keeps identifiers, quoted names and operators", () => {
    expect(literalShape("select id, total from orders where id = 42")).toBe("select id, total from orders where id = 0")
    expect(literalShape(`select * from "dbt_ada"."t1" where name = 'it''s' and n2 >= -7 limit 10`)).toBe(`select * from "dbt_ada"."t1" where name = '?' and n2 >= -0 limit 0`)
    expect(literalShape("select c::varchar(20) from t where d = date '2026-01-01'")).toBe("select c::varchar(0) from t where d = date '?'")
    expect(literalShape(`select "wéird'name" from t where x = 'ü'`)).toBe(`select "wéird'name" from t where x = '?'`)
    // Standard strings (the proxy's sessions are pinned to them): a backslash is a character like any other.
    expect(literalShape("select 'a\\' from t where x = 1")).toBe("select '?' from t where x = 0")
  })

  it("gives no shape where the characters alone do not settle how PostgreSQL reads the constants", () => {
    for (const sql of [
      "select * from orders",
      "select E'a\\'' from t where x = 1",
      "select e'x', 1",
      "select B'101', 1",
      "select X'ff', 1",
      "select N'x', 1",
      "select U&'d\\0061t', 1",
      "select U&\"x\" from t where y = 1",
      "select $$a$$, 1",
      "select $1, 2",
      "select 1 -- ' or 1=1",
      "select /* ' */ 1",
      "select 1.5",
      "select .5, 1",
      "select 1e5",
      "select 0x1F",
      "select 1_000",
      "select 1234567890",
      "select 'unterminated",
      "select \"unterminated, 1",
      "select 'a' from t\0 where x = 1",
      "select 1 from t where x = 'a' and y = ä",
      "select 1\u0001",
      "select 5'x'"
    ]) {
      expect([sql, literalShape(sql)]).toEqual([sql, null])
    }
  })

  // Statements of the kinds the proxy sees, with slots for constants.
  const TEMPLATES = [
    "select id, total from orders where id = {N}",
    "select * from information_schema.columns where table_schema = {S} and table_name = {S} order by ordinal_position",
    "insert into dbt_ada.seed_regions (id, name) values ({N}, {S}), ({N}, {S})",
    "update t set a = {S}, b = b + {N} where c in ({S}, {S}) returning *",
    "select {S}::regclass, {N}::int4, {S} || {S}",
    "create table \"sb\".\"dbt_ada\".\"m__dbt_tmp\" as (select id, {S} as label from raw.orders where amount > {N} limit {N})",
    "select count(*) from t where s like {S} escape {S}",
    "comment on table dbt_ada.orders is {S}",
    "set statement_timeout = {N}",
    "set search_path to {S}, public",
    "select 1 from t where x = {S}; select {N}",
    "delete from t where id = {N} and note <> {S}",
    "select case when a > {N} then {S} else {S} end from t",
    "select * from t where ts > timestamp {S} - interval {S}",
    "select t1.c2 from t1 join t2 on t1.id = t2.id where t2.v = -{N}",
    "copy dbt_ada.orders to {S}",
    "select dblink({S}, {S})",
    "fetch {N} from c",
    "select {S}{S}",
    "select x from t where y = {S}\n{S}",
    "select array[{N}, {N}][{N}]"
  ]

  it("statements of one shape parse into one tree but for their constants, and share a verdict", () => {
    const next = random(20261129)
    for (const template of TEMPLATES) {
      for (let round = 0; round < 40; round++) {
        const a = fill(template, next)
        const b = fill(template, next)
        const shape = literalShape(a.text)
        if (shape === null) continue
        expect([a.text, literalShape(b.text)]).toEqual([a.text, shape])
        const constants = new Set([...a.strings, ...b.strings])
        expect([a.text, b.text, structureOf(b.text, constants)]).toEqual([a.text, b.text, structureOf(a.text, constants)])
        const [verdictA, verdictB] = [classifyDbtSql(a.text, "sb"), classifyDbtSql(b.text, "sb")]
        expect([b.text, verdictB.allowed, verdictB.allowed ? verdictB.statements.map((s) => s.kind) : verdictB.reason]).toEqual([
          b.text,
          verdictA.allowed,
          verdictA.allowed ? verdictA.statements.map((s) => s.kind) : verdictA.reason
        ])
      }
    }
  })

  it("random text of tricky characters: whenever two texts share a shape, they share a tree but for their constants", () => {
    const next = random(42)
    // Select lists of constants with hazards next to them, so that most texts parse and a misread constant shows.
    const TERMS = ["{S}", "{N}", "x", "\"q\"", "\"q\"\"r\"", "\"é\"", "({N})", "{S}::text", "-{N}"]
    const HAZARDS = ["E", "e", "N", "B", "X", "U&", "$", "$$", "\\", "--", "/*", "*/", ".", "0x", "e5", "_", "é", "1.", "'", "\n", "x"]
    const SEPARATORS = [", ", " || ", " + ", "\n, ", ",", " "]
    const pick = (list: ReadonlyArray<string>) => list[Math.floor(next() * list.length)]!
    let compared = 0
    let parsed = 0
    for (let sample = 0; sample < 20_000; sample++) {
      const terms = Array.from({ length: 1 + Math.floor(next() * 4) }, () => `${next() < 0.2 ? pick(HAZARDS) : ""}${pick(TERMS)}${next() < 0.2 ? pick(HAZARDS) : ""}`)
      const pieces = ["select ", ...terms.flatMap((term, i) => (i === 0 ? [term] : [pick(SEPARATORS), term]))]
      // The same pieces twice, with different constants in their constant slots.
      const template = pieces.join("")
      const a = fill(template, next)
      const shape = literalShape(a.text)
      if (shape === null) continue
      const b = fill(template, next)
      if (literalShape(b.text) !== shape) continue
      compared++
      if (structureOf(a.text, new Set()) !== "syntax error") parsed++
      const constants = new Set([...a.strings, ...b.strings])
      expect([a.text, b.text, structureOf(b.text, constants)]).toEqual([a.text, b.text, structureOf(a.text, constants)])
    }
    expect(compared).toBeGreaterThan(5_000)
    expect(parsed).toBeGreaterThan(2_000)
  })
})
