import { describe, expect, it } from "vitest"
import { candidateNumbers, gradeNumbers, statedNumbers } from "../../../src/domain/grading/Numbers"

const values = (text: string) => statedNumbers(text).map((n) => (n.percent ? `${n.value}%` : n.value))

describe("numbers an answer states", () => {
  it("reads currency, thousands separators, decimals, exponents, percentages and k/m/b", () => {
    expect(values("$1,234,567.89")).toEqual([1234567.89])
    expect(values("€ 12")).toEqual([12])
    expect(values("-$5 and $-6 and −7")).toEqual([-5, -6, -7])
    expect(values("1.2k, 3.4M, $5bn, 2 million, 7B")).toEqual([1200, 3400000, 5e9, 2e6, 7e9])
    expect(values("25% and 12.5 %")).toEqual(["25%", "12.5%"])
    expect(values("1.5e3 and .5")).toEqual([1500, 0.5])
    expect(values("**42**.")).toEqual([42])
  })

  it("leaves out dates, times, versions, identifiers and ordinals, and reads units after a number", () => {
    expect(values("2023-01-05, 2023-01-05T10:00:00Z, 01/05/2023, 10:30, Jan 5, 2023, 5 March 2024, March 2024")).toEqual([])
    expect(values("Q3 order_12 3rd v1.2.3 http://example.com/42")).toEqual([])
    expect(values("10x 5min 42GB")).toEqual([10, 5, 42])
  })

  it("keeps digits it cannot read as unreadable, never drops them", () => {
    expect(statedNumbers("0x4D2 1,2,3 ４３ 43¹ 1e999").map((n) => n.kind)).toEqual(["unreadable", "unreadable", "unreadable", "unreadable", "unreadable"])
    expect(statedNumbers("42 (or forty-three)").map((n) => n.kind)).toEqual(["value", "unreadable"])
  })

  it("reads dashes, minus and negative as signs, and bounds as bounds", () => {
    expect(values("–42, Δ-7, minus 3, negative 2, 10-20")).toEqual([-42, -7, -3, -2, 10, -20])
    expect(statedNumbers("more than 1,000 and at most 7").map((n) => n.kind)).toEqual(["bound", "bound"])
  })

  it("keeps the step each number shows, for rounding", () => {
    expect(statedNumbers("1.2k 1,234.50 3M").map((n) => n.step)).toEqual([100, 0.01, 1e6])
  })

  it("drops numbers the question states and years named as a time, unless the gold value is one", () => {
    expect(candidateNumbers("42 orders over $100 in 2023", [42], "How many orders over $100?").map((n) => n.value)).toEqual([42])
    expect(candidateNumbers("The busiest year was 2019", [2019]).map((n) => n.value)).toEqual([2019])
    expect(candidateNumbers("It was in 2019", [2019]).map((n) => n.value)).toEqual([2019])
    expect(candidateNumbers("5", [7], "the top 5").map((n) => n.value)).toEqual([])
    expect(candidateNumbers("5", [5], "the top 5").map((n) => n.value)).toEqual([5])
  })

  it("drops SQL the answer shows, and a number said twice", () => {
    expect(candidateNumbers("```sql\nselect count(*) from t limit 10\n```\nThere are 12.", [12]).map((n) => n.value)).toEqual([12])
    expect(gradeNumbers("12 (that is, 12.00 in total)", 12).score).toBe(1)
    expect(gradeNumbers("5 and 5", [5, 5]).score).toBe(1)
  })
})

describe("numbers an answer states, in time linear in its length", () => {
  // Attack 37 F2: an unclosed backtick before many SQL words took 56 s for 700 KB, holding the gateway's event loop.
  it("reads an answer of an unclosed backtick and 100,000 SQL words in well under a second", () => {
    for (const text of ["`" + "select ".repeat(100_000), "`" + "from x where ".repeat(50_000) + "42"]) {
      const started = performance.now()
      statedNumbers(text)
      expect(performance.now() - started).toBeLessThan(1_000)
    }
  })
})

describe("grading numbers", () => {
  it("needs exactly as many candidates as gold values", () => {
    expect(gradeNumbers("It is 10, 20 or 30", 20).score).toBe(0)
    expect(gradeNumbers("It is 20", 20).score).toBe(1)
    expect(gradeNumbers("1, 2 and 3", [3, 2, 1]).score).toBe(1)
    expect(gradeNumbers("1, 2 and 3", [3, 2, 1], { ordered: true }).score).toBeCloseTo(1 / 3)
    expect(gradeNumbers("1, 2, 3 and 4", [1, 2, 3]).score).toBe(0)
  })

  it("scores 1 within tolerance, 0.5 for the gold rounded to the answer's digits (two significant at least), else 0", () => {
    expect(gradeNumbers("1234.57", 1234.5678).score).toBe(1)
    expect(gradeNumbers("1235", 1234.5678).score).toBe(0.5)
    expect(gradeNumbers("$1.23M", 1_234_567).score).toBe(0.5)
    expect(gradeNumbers("$1M", 1_234_567).score).toBe(0)
    expect(gradeNumbers("1k", 1234).score).toBe(0)
    expect(gradeNumbers("1200", 1234).score).toBe(0)
    expect(gradeNumbers("1235", 1234.5678, { tolerance: { abs: 0, rel: 0.001 } }).score).toBe(1)
  })

  it("reads a percentage as its fraction, or as its number when the gold is in percent", () => {
    expect(gradeNumbers("42%", 0.42).score).toBe(1)
    expect(gradeNumbers("42 percent", 0.42).score).toBe(1)
    expect(gradeNumbers("42%", 42).score).toBe(0)
    expect(gradeNumbers("42%", 42, { unit: "percent" }).score).toBe(1)
    expect(gradeNumbers("0.42", 42).score).toBe(0)
    expect(gradeNumbers("41.7%", 0.4172).score).toBe(0.5)
  })

  it("holds integers exactly unless the check gives a tolerance", () => {
    expect(gradeNumbers("98,774", 98_765).score).toBe(0)
    expect(gradeNumbers("98,774", 98_765, { tolerance: { abs: 10, rel: 0 } }).score).toBe(1)
    expect(gradeNumbers("98,765.0", 98_765).score).toBe(1)
  })
})
