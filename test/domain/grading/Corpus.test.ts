import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { EvalTask } from "../../../src/domain/EvalSet"
import { gradeTask, type ModelCapture, type TaskEvidence, type Verdict } from "../../../src/domain/grading/Grade"
import type { Table } from "../../../src/domain/grading/Tables"

/**
 * The grader corpus: (answer, gold) pairs with the verdict a careful person gives. Adversarial pairs
 * try to earn CORRECT without the right answer (hedging, lists, near misses, look-alike numbers,
 * scrambled tables, missing evidence); not one may get it.
 */
interface Pair {
  readonly name: string
  readonly task: unknown
  readonly evidence: Partial<TaskEvidence>
  readonly expect: Verdict
  readonly adversarial: boolean
}

const decodeTask = Schema.decodeUnknownSync(EvalTask)
const evidenceOf = (partial: Partial<TaskEvidence>, question: string): TaskEvidence => ({
  question,
  answer: null,
  last_result: null,
  gold_tables: {},
  models: {},
  failure: null,
  ...partial
})

const numberPair = (name: string, question: string, answer: string | null, gold: number | Array<number>, expected: Verdict, adversarial = false, extra: Record<string, unknown> = {}): Pair => ({
  name,
  task: { id: "t", class: "read", prompt: question, checks: [{ name: "value", type: "number", gold, ...extra }] },
  evidence: { answer },
  expect: expected,
  adversarial
})

// Gold values across magnitudes and signs, each written the ways an agent writes a right answer.
const GOLDS = [0, 7, 42, 365, 1234, 2500, 98_765, 1_234_567, 0.25, 3.5, 52.3456, -17, -0.75, 1_000_000, 12.5, 99.99, 150_000, 0.001, 86_400]
const written = (g: number): Array<string> => {
  const abs = Math.abs(g)
  const sign = g < 0 ? "-" : ""
  const fixed2 = abs.toFixed(2)
  const grouped = abs.toLocaleString("en-US", { maximumFractionDigits: 6 })
  const forms = [
    `${sign}${abs}`,
    `The answer is ${sign}${grouped}.`,
    `**${sign}${grouped}**`,
    `There were ${sign}${grouped} in total in 2023.`,
    `Result: ${sign}$${grouped}`,
    `${sign}${grouped} (computed from the orders table)`,
    `I found ${sign}${abs.toExponential()} when summing.`,
    `≈ ${sign}${grouped}`
  ]
  if (Number.isInteger(abs) || abs * 100 === Math.round(abs * 100)) forms.push(`${sign}${fixed2}`)
  if (abs >= 1000 && abs % 100 === 0) forms.push(`${sign}${abs / 1000}k`)
  if (abs >= 1_000_000 && abs % 10_000 === 0) forms.push(`${sign}${abs / 1_000_000} million`)
  return forms
}

const generated: Array<Pair> = GOLDS.flatMap((g) => [
  ...written(g).map((answer, i) => numberPair(`${g} written as form ${i}`, "What is the figure?", answer, g, "CORRECT")),
  // Wrong by a tenth, by the sign, by a thousand.
  ...(g === 0 ? [] : [numberPair(`${g} off by 10 %`, "What is the figure?", `It is ${g * 1.1}`, g, "WRONG"), numberPair(`${g} with the sign flipped`, "What is the figure?", `${-g}`, g, "WRONG")]),
  numberPair(`${g} a thousand times`, "What is the figure?", `${g * 1000 + 1}`, g, "WRONG"),
  // Right, with other candidates beside it.
  numberPair(`${g} hedged`, "What is the figure?", `Either ${g} or ${g + 5}`, g, "WRONG", true)
])

const adversarialNumbers: Array<Pair> = [
  numberPair("one of three", "Which value?", "It is 10, 20 or 30", 20, "WRONG", true),
  numberPair("a range around it", "How many?", "between 900 and 1100", 1000, "WRONG", true),
  numberPair("two guesses", "How many?", "1,000 or so, maybe 1,100", 1000, "WRONG", true),
  numberPair("negated", "How many?", "-1000", 1000, "WRONG", true),
  numberPair("unicode minus", "How many?", "−42", 42, "WRONG", true),
  numberPair("a percentage of something else", "How many?", "10%", 1000, "WRONG", true),
  numberPair("one significant digit", "How many?", "about 1k", 1234, "WRONG", true),
  numberPair("decimal point misplaced", "How much?", "1234567", 1234.567, "WRONG", true),
  numberPair("European separators", "How much?", "1.234,56", 1234.56, "WRONG", true),
  numberPair("only in SQL", "How many?", "```sql\nselect 1234\n```", 1234, "WRONG", true),
  numberPair("inside an identifier", "How many?", "see order_1234", 1234, "WRONG", true),
  numberPair("an ordinal", "How many?", "the 1234th", 1234, "WRONG", true),
  numberPair("a time", "How much?", "12:34", 12.34, "WRONG", true),
  numberPair("a date for a year", "Which year?", "2023-12-01", 2023, "WRONG", true),
  numberPair("hex", "How many?", "0x4D2", 1234, "WRONG", true),
  numberPair("space as a separator", "How many?", "1 234", 1234, "WRONG", true),
  numberPair("rounded to tens", "How many?", "approximately 1230", 1234, "WRONG", true),
  numberPair("rounded to a million", "How much?", "$1M", 1_234_567, "WRONG", true),
  numberPair("the question's own number", "Is it more than 500?", "Yes, more than 500", 600, "WRONG", true),
  numberPair("echoing the top-N", "Among the top 5 customers, how many are in Paris?", "5", 7, "WRONG", true),
  numberPair("fraction for a percentage number", "What share, in percent?", "0.42", 42, "WRONG", true),
  numberPair("in words", "How many?", "forty-two", 42, "WRONG", true),
  numberPair("digits apart", "How many?", "4 2", 42, "WRONG", true),
  numberPair("just outside tolerance", "How much?", "42.02", 42, "WRONG", true),
  numberPair("a hyphenated range", "How many?", "42-43", 42, "WRONG", true),
  numberPair("a ratio", "How many?", "42/100", 42, "WRONG", true),
  numberPair("two bounds around it", "How much?", "between 41.99 and 42.01", 42, "WRONG", true),
  numberPair("plus or minus", "How many?", "42 ± 1", 42, "WRONG", true),
  numberPair("full-width digits", "How many?", "４２", 42, "WRONG", true),
  numberPair("Arabic-Indic digits", "How many?", "٤٢", 42, "WRONG", true),
  numberPair("a link holding another number", "How many?", "41 [source](http://example.com/42)", 42, "WRONG", true),
  numberPair("thousands for units", "How many?", "42k", 42, "WRONG", true),
  numberPair("millions for units", "How many?", "42 million", 42, "WRONG", true),
  numberPair("one too many in a list", "Top three?", "1, 2, 3, 4", [1, 2, 3], "WRONG", true),
  numberPair("a list without spaces", "Top three?", "1,2,3", [1, 2, 3], "WRONG", true),
  numberPair("no answer", "How many?", null, 42, "WRONG", true),
  numberPair("Infinity", "How many?", "Infinity", 42, "WRONG", true),
  numberPair("NaN", "How many?", "NaN", 42, "WRONG", true),
  numberPair("a version", "How many?", "v4.2", 4.2, "WRONG", true),
  numberPair("many numbers in prose", "How many orders?", "Of 120 customers, 42 ordered and 78 did not.", 42, "WRONG", true),
  numberPair("the gold among a markdown table", "How many?", "| a | b |\n|---|---|\n| 42 | 43 |", 42, "WRONG", true),
  numberPair("rounded to one decimal (partial, not correct)", "What share?", "41.7%", 0.4172, "PARTIAL", true),
  numberPair("k rounding (partial, not correct)", "How many?", "1.2k", 1234, "PARTIAL", true),
  numberPair("M rounding (partial, not correct)", "How much?", "$1.23M", 1_234_567, "PARTIAL", true),
  numberPair("reversed order (partial, not correct)", "In order?", "3, 2, 1", [1, 2, 3], "PARTIAL", true, { ordered: true }),
  // Attack 35 (the grading library under attack): each of these was CORRECT.
  numberPair("a hedge behind 'maybe'", "How many orders?", "It is 1234, or maybe 1243.", 1234, "WRONG", true),
  numberPair("a hedge behind 'marginally'", "How many orders?", "Probably 1234; marginally 1300", 1234, "WRONG", true),
  numberPair("a hedge behind a month-like year", "How many orders?", "1234, or May 1243", 1234, "WRONG", true),
  numberPair("a percentage not multiplied by 100", "What share of customers churned?", "The churn rate is 0.42%.", 0.42, "WRONG", true),
  numberPair("a count written as a percentage", "How many orders were late?", "50% of orders were late", 50, "WRONG", true),
  numberPair("a count within the relative tolerance", "How many orders?", "98,774", 98_765, "WRONG", true),
  numberPair("the neighbouring id", "Which customer id has the most orders?", "Customer 100002", 100_001, "WRONG", true),
  numberPair("an en dash as minus", "What was the net change?", "The net change was –42.", 42, "WRONG", true),
  numberPair("minus in words", "What was the net change?", "minus 42", 42, "WRONG", true),
  numberPair("negative in words", "What was the net change?", "negative 42", 42, "WRONG", true),
  numberPair("a sign after a letter", "What was the change?", "Δ-42", 42, "WRONG", true),
  numberPair("a hedge in words", "How many?", "42 (or forty-three)", 42, "WRONG", true),
  numberPair("a hedge in full-width digits", "How many?", "42 or ４３", 42, "WRONG", true),
  numberPair("a hedge in mathematical digits", "How many?", "42 or 𝟒𝟑", 42, "WRONG", true),
  numberPair("a hedge with -ish", "How many?", "42 or 43ish", 42, "WRONG", true),
  numberPair("a hedge with a superscript", "How many?", "42 or 43¹", 42, "WRONG", true),
  numberPair("a hedge to infinity", "How many?", "42 or 1e999", 42, "WRONG", true),
  numberPair("a lower bound", "How many?", "more than 1,000", 1000, "WRONG", true),
  numberPair("an upper bound", "How many?", "fewer than 42", 42, "WRONG", true),
  numberPair("a capitalised scale word", "How many?", "42 Million", 42, "WRONG", true),
  numberPair("hundreds", "How many?", "42 hundred", 42, "WRONG", true)
]

const plainNumbers: Array<Pair> = [
  numberPair("percent for a fraction", "What share?", "42%", 0.42, "CORRECT"),
  numberPair("percent for a percentage, spaced", "What share, in percent?", "42 %", 42, "CORRECT", false, { unit: "percent" }),
  numberPair("percent for a percentage gold not declared in percent", "What share, in percent?", "42 %", 42, "WRONG"),
  numberPair("question's number dropped", "How many orders over $100?", "42 orders were over $100.", 42, "CORRECT"),
  numberPair("year as the answer", "Which year had the most orders?", "The busiest was in 2019.", 2019, "CORRECT"),
  numberPair("an unordered list", "Top three?", "3, 1 and 2", [1, 2, 3], "CORRECT"),
  numberPair("a wider tolerance", "How much?", "1235", 1234.5678, "CORRECT", false, { tolerance: { rel: 0.001 } }),
  numberPair("the same number twice", "How many?", "42 (42 exactly)", 42, "CORRECT"),
  numberPair("exponent", "How many?", "4.2e1", 42, "CORRECT"),
  numberPair("sum rounded to the cent", "What is the average?", "$52.35", 52.3456, "CORRECT"),
  // Attack 35: right answers the grader misread.
  numberPair("a fraction restated as a percentage", "What is the churn rate?", "The churn rate is 0.42 (42%).", 0.42, "CORRECT"),
  numberPair("a figure restated rounded", "What is the revenue?", "$1,234,567 (about $1.23 million)", 1_234_567, "CORRECT"),
  numberPair("percent in words", "What share?", "42 percent", 0.42, "CORRECT"),
  numberPair("a percentage for a percentage gold", "What share, in percent?", "42%", 42, "CORRECT", false, { unit: "percent" }),
  numberPair("a repeated gold value", "The two smallest order counts?", "5 and 5", [5, 5], "CORRECT"),
  numberPair("a capitalised scale word", "What is the revenue?", "$1.2 Million", 1_200_000, "CORRECT"),
  numberPair("a scale word after a space", "What is the revenue?", "€1.2 bn", 1_200_000_000, "CORRECT"),
  numberPair("a non-breaking space between thousands", "How many?", "1\u00a0234", 1234, "CORRECT"),
  numberPair("a unit after the number", "How much storage?", "42GB", 42, "CORRECT"),
  numberPair("italic", "How many?", "_42_", 42, "CORRECT"),
  numberPair("SQL in a postgresql block", "How many?", "```postgresql\nselect count(*) from t where x > 100\n```\n42", 42, "CORRECT"),
  numberPair("SQL inline", "How many?", "Running `select count(*) from t where amount > 100` gives 42.", 42, "CORRECT")
]

const gold: Table = {
  columns: ["customer", "orders", "revenue"],
  rows: [
    ["ada", 3, "120.50"],
    ["bob", 1, "40.00"],
    ["cy", 2, null]
  ]
}
const tablePair = (name: string, lastResult: Table | null, expected: Verdict, adversarial: boolean, check: Record<string, unknown> = {}, answer: string | null = "Here is the table."): Pair => ({
  name,
  task: { id: "t", class: "read", prompt: "Orders and revenue by customer", checks: [{ name: "rows", type: "table", gold_sql: "select 1", ...check }] },
  evidence: { last_result: lastResult, gold_tables: { rows: gold }, answer },
  expect: expected,
  adversarial
})
const rowsOf = (...rows: Array<Array<string | number | null>>): Table => ({ columns: ["c", "o", "r"], rows })

const tables: Array<Pair> = [
  tablePair("same rows, another order", rowsOf(["cy", 2, null], ["ada", 3, 120.5], ["bob", 1, 40]), "CORRECT", false),
  tablePair("numbers as text with separators", rowsOf(["ada", "3", "$120.50"], ["bob", "1", "40"], ["cy", "2", null]), "CORRECT", false),
  tablePair("an extra column", { columns: ["x", "c", "o", "r"], rows: [[1, "ada", 3, 120.5], [2, "bob", 1, 40], [3, "cy", 2, null]] }, "CORRECT", false),
  tablePair("from the answer's Markdown", null, "CORRECT", false, { source: "answer" }, "| c | o | r |\n|---|---|---|\n| ada | 3 | 120.50 |\n| bob | 1 | 40.00 |\n| cy | 2 |  |", ),
  tablePair("Markdown with short separators and NULL written out", null, "CORRECT", false, { source: "answer" }, "| c | o | r |\n|--|--|--|\n| ada | 3 | 120.50 |\n| bob | 1 | 40.00 |\n| cy | 2 | NULL |"),
  tablePair("scrambled rows", rowsOf(["ada", 1, 120.5], ["bob", 3, 40], ["cy", 2, null]), "PARTIAL", true),
  tablePair("one column twice for two", { columns: ["c", "n"], rows: [["ada", 3], ["bob", 1], ["cy", 2]] }, "PARTIAL", true),
  tablePair("a row missing", rowsOf(["ada", 3, 120.5], ["bob", 1, 40]), "WRONG", true),
  tablePair("a row extra", rowsOf(["ada", 3, 120.5], ["bob", 1, 40], ["cy", 2, null], ["dee", 0, 0]), "WRONG", true),
  tablePair("a row duplicated for another", rowsOf(["ada", 3, 120.5], ["ada", 3, 120.5], ["cy", 2, null]), "WRONG", true),
  tablePair("empty string for NULL", rowsOf(["ada", 3, 120.5], ["bob", 1, 40], ["cy", 2, ""]), "PARTIAL", true),
  tablePair("the text NULL for NULL", rowsOf(["ada", 3, 120.5], ["bob", 1, 40], ["cy", 2, "NULL"]), "PARTIAL", true),
  tablePair("zero for NULL", rowsOf(["ada", 3, 120.5], ["bob", 1, 40], ["cy", 2, 0]), "PARTIAL", true),
  tablePair("names in another case", rowsOf(["Ada", 3, 120.5], ["Bob", 1, 40], ["Cy", 2, null]), "PARTIAL", true),
  tablePair("a sum off by 0.02", rowsOf(["ada", 3, 120.52], ["bob", 1, 40], ["cy", 2, null]), "PARTIAL", true),
  tablePair("no rows", { columns: ["c", "o", "r"], rows: [] }, "WRONG", true),
  tablePair("no query ran", null, "WRONG", true),
  tablePair("extra columns refused", { columns: ["x", "c", "o", "r"], rows: [[1, "ada", 3, 120.5], [2, "bob", 1, 40], [3, "cy", 2, null]] }, "WRONG", true, { extra_columns: "refuse" }),
  tablePair("order required", rowsOf(["cy", 2, null], ["ada", 3, 120.5], ["bob", 1, 40]), "WRONG", true, { row_order: "match" }),
  tablePair("a header-only Markdown table", null, "WRONG", true, { source: "answer" }, "| c | o | r |\n|---|---|---|"),
  tablePair("the gold never captured", rowsOf(["ada", 3, 120.5]), "ERROR", true, { name: "other" }),
  tablePair("every row scrambled, a lenient pass mark", rowsOf(["ada", 1, 40], ["bob", 2, null], ["cy", 3, 120.5]), "WRONG", true, { pass_mark: 0.6 }),
  tablePair("a table but no answer", rowsOf(["ada", 3, 120.5], ["bob", 1, 40], ["cy", 2, null]), "WRONG", true, {}, null),
  {
    name: "ids off by one",
    task: { id: "t", class: "read", prompt: "Orders per customer id", checks: [{ name: "rows", type: "table", gold_sql: "select 1" }] },
    evidence: { answer: "done", last_result: { columns: ["id", "n"], rows: [[10002, 5], [10003, 9], [10004, 2]] }, gold_tables: { rows: { columns: ["id", "n"], rows: [[10001, 5], [10002, 9], [10003, 2]] } } },
    expect: "PARTIAL",
    adversarial: true
  },
  {
    name: "a zip code without its leading zero",
    task: { id: "t", class: "read", prompt: "Zip codes", checks: [{ name: "rows", type: "table", gold_sql: "select 1" }] },
    evidence: { answer: "done", last_result: { columns: ["zip"], rows: [["2134"]] }, gold_tables: { rows: { columns: ["zip"], rows: [["02134"]] } } },
    expect: "WRONG",
    adversarial: true
  },
  {
    name: "ids beyond 2^53",
    task: { id: "t", class: "read", prompt: "The id", checks: [{ name: "rows", type: "table", gold_sql: "select 1" }] },
    evidence: { answer: "done", last_result: { columns: ["id"], rows: [["9007199254740993"]] }, gold_tables: { rows: { columns: ["id"], rows: [["9007199254740992"]] } } },
    expect: "WRONG",
    adversarial: true
  }
]

const model = (changes: Partial<ModelCapture> = {}): ModelCapture => ({
  exists: true,
  row_count: 365,
  columns: [{ name: "order_date", type: "date" }, { name: "revenue", type: "numeric" }],
  grains: { order_date: { duplicates: 0, null_keys: 0 } },
  sums: { revenue: 1_000_000 },
  ...changes
})
const STRUCTURAL_CHECKS = [
  { name: "built", type: "exists", model: "analytics.orders_daily" },
  { name: "rows", type: "row_count", model: "orders_daily", equals: 365 },
  { name: "grain", type: "grain", model: "orders_daily", columns: ["order_date"] },
  { name: "cols", type: "columns", model: "orders_daily", required: ["order_date", "revenue"] },
  { name: "revenue", type: "sum", model: "orders_daily", column: "revenue", gold: 1_000_000, tolerance: { rel: 0.001 } }
]
const writePair = (name: string, capture: ModelCapture | null, expected: Verdict, adversarial: boolean, failure: string | null = null): Pair => ({
  name,
  task: { id: "w", class: "write", prompt: "Build orders_daily", builds: ["orders_daily"], checks: STRUCTURAL_CHECKS },
  evidence: { models: capture === null ? {} : { orders_daily: capture }, failure },
  expect: expected,
  adversarial
})

const structural: Array<Pair> = [
  writePair("built as asked", model(), "CORRECT", false),
  writePair("sum within the band", model({ sums: { revenue: 1_000_900 } }), "CORRECT", false),
  writePair("not built", model({ exists: false, row_count: null, columns: [], grains: {}, sums: {} }), "WRONG", true),
  writePair("duplicated grain", model({ grains: { order_date: { duplicates: 2, null_keys: 0 } } }), "PARTIAL", true),
  writePair("a NULL key", model({ grains: { order_date: { duplicates: 0, null_keys: 1 } } }), "PARTIAL", true),
  writePair("a day missing", model({ row_count: 364 }), "PARTIAL", true),
  writePair("sum outside the band", model({ sums: { revenue: 1_002_000 } }), "PARTIAL", true),
  writePair("a column missing", model({ columns: [{ name: "order_date", type: "date" }], sums: {} }), "PARTIAL", true),
  writePair("nothing captured", null, "ERROR", true),
  writePair("setup failed", model(), "ERROR", true, "setup exited with status 1"),
  writePair("sum not numeric", model({ sums: { revenue: null } }), "PARTIAL", true)
]

const corpus: Array<Pair> = [...generated, ...adversarialNumbers, ...plainNumbers, ...tables, ...structural]

describe("the grader corpus", () => {
  it("holds at least 300 pairs, 50 of them adversarial", () => {
    expect(corpus.length).toBeGreaterThanOrEqual(300)
    expect(corpus.filter((p) => p.adversarial).length).toBeGreaterThanOrEqual(50)
  })

  it("gives every pair its verdict, and no adversarial pair CORRECT", () => {
    const graded = corpus.map((pair) => {
      const task = decodeTask(pair.task)
      const grade = gradeTask(task, evidenceOf(pair.evidence, task.prompt))
      return { name: pair.name, adversarial: pair.adversarial, expected: pair.expect, got: grade.verdict, detail: grade.detail, checks: grade.checks.map((c) => c.detail) }
    })
    expect(graded.filter((g) => g.adversarial && g.got === "CORRECT")).toEqual([])
    expect(graded.filter((g) => g.got !== g.expected)).toEqual([])
  })

  it("gives the same verdicts when graded again from the same evidence read back as JSON", () => {
    for (const pair of corpus.slice(0, 120)) {
      const task = decodeTask(pair.task)
      const evidence = evidenceOf(pair.evidence, task.prompt)
      expect(gradeTask(task, JSON.parse(JSON.stringify(evidence)))).toEqual(gradeTask(task, evidence))
    }
  })
})
