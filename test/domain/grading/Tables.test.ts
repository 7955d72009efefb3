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
