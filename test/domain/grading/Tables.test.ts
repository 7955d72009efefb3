import { describe, expect, it } from "vitest"
import { canonicalCell, DEFAULT_TABLE_POLICY, gradeTable, markdownTable, type Table } from "../../../src/domain/grading/Tables"

const gold: Table = {
  columns: ["customer", "orders", "revenue"],
  rows: [
    ["ada", 3, "120.50"],
    ["bob", 1, "40.00"],
    ["cy", 2, null]
  ]
}
const policy = (changes: Partial<typeof DEFAULT_TABLE_POLICY> = {}) => ({ ...DEFAULT_TABLE_POLICY, ...changes })

describe("cells as the grader compares them", () => {
  it("reads numbers however written, midnight timestamps as dates, and NULL by policy", () => {
    expect(canonicalCell("$1,234.50", policy())).toBe(1234.5)
    expect(canonicalCell("**-3**", policy())).toBe(-3)
    expect(canonicalCell("2024-03-01T00:00:00.000Z", policy())).toBe("2024-03-01")
    expect(canonicalCell("2024-03-01 10:00:00", policy())).toBe("2024-03-01 10:00:00")
    expect(canonicalCell("", policy())).toBe("")
    expect(canonicalCell("", policy({ nulls: "same_as_empty" }))).toBe(null)
    expect(canonicalCell("Ada", policy({ case: "insensitive" }))).toBe("ada")
    expect(canonicalCell(true, policy())).toBe("true")
  })
})

describe("grading tables", () => {
  it("matches columns by their values, whatever their names and order, extra columns allowed", () => {
    const answer: Table = {
      columns: ["rev", "name", "n", "extra"],
      rows: [
        [40, "bob", "1", "x"],
        [null, "cy", 2, "y"],
        [120.5, "ada", 3, "z"]
      ]
    }
    expect(gradeTable(answer, gold).score).toBe(1)
    expect(gradeTable(answer, gold, policy({ extra_columns: "refuse" })).score).toBe(0)
    expect(gradeTable(answer, gold, policy({ row_order: "match" })).score).toBeLessThan(1)
  })

  it("checks only the named gold columns when asked", () => {
    const answer: Table = { columns: ["customer"], rows: [["ada"], ["bob"], ["cy"]] }
    expect(gradeTable(answer, gold, policy({ columns: ["customer"] })).score).toBe(1)
    expect(gradeTable(answer, gold).score).toBeCloseTo(1 / 3)
    expect(() => gradeTable(answer, gold, policy({ columns: ["nope"] }))).toThrow(/no column nope/)
  })

  it("refuses rows paired differently even when each column matches on its own", () => {
    const scrambled: Table = {
      columns: ["customer", "orders", "revenue"],
      rows: [
        ["ada", 1, "120.50"],
        ["bob", 3, "40.00"],
        ["cy", 2, null]
      ]
    }
    const grade = gradeTable(scrambled, gold)
    expect(grade.score).toBeLessThan(1)
    expect(grade.detail).toMatch(/paired differently/)
  })

  it("never lets one answer column stand for two gold columns", () => {
    const twin: Table = { columns: ["a", "b"], rows: [[1, 1], [2, 2]] }
    expect(gradeTable({ columns: ["a"], rows: [[1], [2]] }, twin).score).toBe(0.5)
    expect(gradeTable({ columns: ["x", "y"], rows: [[1, 1], [2, 2]] }, twin).score).toBe(1)
  })

  it("finds the consistent assignment among columns with equal values", () => {
    const goldTable: Table = { columns: ["a", "b"], rows: [[1, 2], [2, 1]] }
    const answer: Table = { columns: ["p", "q"], rows: [[2, 1], [1, 2]] }
    expect(gradeTable(answer, goldTable).score).toBe(1)
    const crossed: Table = { columns: ["p", "q"], rows: [[1, 1], [2, 2]] }
    expect(gradeTable(crossed, goldTable).score).toBeLessThan(1)
  })

  it("wants as many rows as the gold table, NULL only for NULL, numbers within tolerance", () => {
    expect(gradeTable({ columns: gold.columns, rows: gold.rows.slice(0, 2) }, gold).score).toBe(0)
    expect(gradeTable({ columns: gold.columns, rows: [...gold.rows, ["dee", 1, 1]] }, gold).score).toBe(0)
    const emptyForNull: Table = { columns: gold.columns, rows: [gold.rows[0]!, gold.rows[1]!, ["cy", 2, ""]] }
    expect(gradeTable(emptyForNull, gold).score).toBeLessThan(1)
    expect(gradeTable(emptyForNull, gold, policy({ nulls: "same_as_empty" })).score).toBe(1)
    const nullText: Table = { columns: gold.columns, rows: [gold.rows[0]!, gold.rows[1]!, ["cy", 2, "NULL"]] }
    expect(gradeTable(nullText, gold).score).toBeLessThan(1)
    const close: Table = { columns: gold.columns, rows: [["ada", 3, 120.5001], ["bob", 1, 40], ["cy", 2, null]] }
    expect(gradeTable(close, gold).score).toBe(1)
    const off: Table = { columns: gold.columns, rows: [["ada", 3, 120.52], ["bob", 1, 40], ["cy", 2, null]] }
    expect(gradeTable(off, gold).score).toBeLessThan(1)
  })
})

describe("tables in an answer's text", () => {
  it("reads the first Markdown pipe table", () => {
    const text = "Here you go:\n\n| customer | orders |\n|---|---:|\n| ada | 3 |\n| **bob** | 1 |\n\nAnything else?"
    expect(markdownTable(text)).toEqual({ columns: ["customer", "orders"], rows: [["ada", "3"], ["**bob**", "1"]] })
    expect(markdownTable("no table | here")).toBe(null)
  })
})

describe("grading tables under attack (attack 35)", () => {
  const timed = <A>(run: () => A) => {
    const started = performance.now()
    const result = run()
    return { result, ms: performance.now() - started }
  }
  const range = (n: number) => Array.from({ length: n }, (_, i) => i)

  it("stays fast when many columns are interchangeable and the rows are paired wrong", () => {
    const columns = ["id", "revenue", ...range(8).map((i) => `empty_${i}`)]
    const gold: Table = { columns, rows: range(10_000).map((i) => [i, i * 2, ...range(8).map(() => null)]) }
    const wrong: Table = { columns, rows: range(10_000).map((i) => [i, ((i + 1) % 10_000) * 2, ...range(8).map(() => null)]) }
    const { result, ms } = timed(() => gradeTable(wrong, gold))
    expect(result.score).toBeLessThan(0.5)
    expect(ms).toBeLessThan(1500)
  })

  it("stays fast on columns of equal counts whose rows disagree", () => {
    const columns = range(8).map((i) => `flag_${i}`)
    const gold: Table = { columns, rows: range(10_000).map((r) => columns.map((_, c) => ((r >> c) & 1) === 1)) }
    const wrong: Table = { columns, rows: range(10_000).map((r) => columns.map((_, c) => (((r * 7919) >> c) & 1) === 1)) }
    const { result, ms } = timed(() => gradeTable(wrong, gold))
    expect(result.score).toBeLessThan(1)
    expect(ms).toBeLessThan(1500)
  })

  it("finds the right pairing of look-alike columns given in another order", () => {
    const columns = range(8).map((i) => `flag_${i}`)
    const rows = range(20).map((r) => columns.map((_, c) => ((r * (c + 3)) % 20) < 10))
    const gold: Table = { columns, rows }
    const reversed: Table = { columns: [...columns].reverse(), rows: rows.map((row) => [...row].reverse()) }
    expect(gradeTable(reversed, gold).score).toBe(1)
  })

  it("scores scrambled rows by the rows that agree, not by the columns", () => {
    const columns = range(10).map((i) => `c${i}`)
    const gold: Table = { columns, rows: range(50).map((r) => columns.map((_, c) => r * 100 + c)) }
    const scrambled: Table = { columns, rows: range(50).map((r) => columns.map((_, c) => ((r + c) % 50) * 100 + c)) }
    expect(gradeTable(scrambled, gold).score).toBeLessThan(0.2)
  })

  it("reads a separator line of any length without backtracking", () => {
    const { result, ms } = timed(() => markdownTable(`| a |\n${" ".repeat(200_000)}x`))
    expect(result).toBe(null)
    expect(ms).toBeLessThan(100)
  })

  it("keeps codes with leading zeros and ids beyond 2^53 as text, and integers exact", () => {
    expect(canonicalCell("02134", policy())).toBe("02134")
    expect(canonicalCell("9007199254740993", policy())).toBe("9007199254740993")
    expect(gradeTable({ columns: ["id"], rows: [[123460]] }, { columns: ["id"], rows: [[123456]] }).score).toBe(0)
    expect(canonicalCell("café".normalize("NFD"), policy())).toBe("café".normalize("NFC"))
  })
})

