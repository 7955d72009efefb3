/** A number an answer states: its value, how many decimals it shows at its own scale, whether it is a percentage, its text. */
export interface StatedNumber {
  readonly value: number
  /** The smallest step the answer's digits show, in the value's unit (1.2k shows steps of 100). */
  readonly step: number
  readonly percent: boolean
  readonly text: string
}

/** How far a stated number may be from the gold value: the larger of the two bounds. */
export interface Tolerance {
  readonly abs: number
  readonly rel: number
}

// Relative, not Spider 2.0's absolute 0.01, which calls 0.04 right for 0.05; an answer rounded further scores 0.5 (roundsTo).
export const DEFAULT_TOLERANCE: Tolerance = { abs: 0, rel: 1e-4 }

const SCALES: Record<string, number> = {
  k: 1e3, thousand: 1e3, m: 1e6, mn: 1e6, million: 1e6, b: 1e9, bn: 1e9, billion: 1e9, t: 1e12, trillion: 1e12
}

const MONTH = "(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\\.?"
// Dates and times are not quantities: masked before numbers are read.
const DATES = new RegExp(
  [
    "\\d{4}-\\d{1,2}-\\d{1,2}(?:[T ]\\d{1,2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:Z|[+-]\\d{2}:?\\d{2})?)?",
    "\\d{1,2}/\\d{1,2}/\\d{2,4}",
    "\\d{1,2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?",
    `\\b${MONTH}\\s+\\d{1,2}(?:st|nd|rd|th)?,?\\s+\\d{4}\\b`,
    `\\b\\d{1,2}(?:st|nd|rd|th)?\\s+${MONTH}\\s+\\d{4}\\b`,
    `\\b${MONTH}\\s+\\d{4}\\b`
  ].join("|"),
  "gi"
)
// A year named as a time ("in 2023", "FY2023") when the gold value is not itself a year.
const YEAR_CONTEXT = /(?:\b(?:in|for|during|since|until|through|year|of|fy)\s*)$/i
const NUMBER =
  /(?<![\p{L}\p{N}_.,])([-−+]?)([$€£¥]?)([-−]?)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:[eE]([-+]?\d{1,3}))?(?:(\s?%)|([kKmMbBtT]|bn|mn|Bn|Mn)(?![\p{L}\p{N}_])|\s(thousand|million|billion|trillion)\b)?(?![\p{L}\p{N}_]|[.,]\d)/gu
// SQL the answer shows is how it got there, not what it says.
const SQL_BLOCK = /```\s*sql\b[\s\S]*?```/gi

const isYear = (value: number) => Number.isInteger(value) && value >= 1900 && value <= 2100

/** The numbers a text states, dates, times, and numbers inside identifiers (Q3, order_12) left out. */
export const statedNumbers = (text: string): Array<StatedNumber & { readonly index: number }> => {
  const masked = text.replace(SQL_BLOCK, (block) => " ".repeat(block.length)).replace(DATES, (date) => " ".repeat(date.length))
  const found: Array<StatedNumber & { readonly index: number }> = []
  for (const match of masked.matchAll(NUMBER)) {
    const [whole, sign1 = "", , sign2 = "", digits = "", exponent, percent, letter, word] = match
    const negative = /[-−]/.test(sign1) !== /[-−]/.test(sign2)
    const plain = digits.replace(/,/g, "")
    const decimals = plain.includes(".") ? plain.length - plain.indexOf(".") - 1 : 0
    const scale = SCALES[(letter ?? word ?? "").toLowerCase()] ?? 1
    const power = exponent === undefined ? 0 : Number(exponent)
    const value = Number(plain) * 10 ** power * scale * (negative ? -1 : 1)
    if (!Number.isFinite(value)) continue
    found.push({ value, step: 10 ** (power - decimals) * scale, percent: percent !== undefined, text: whole.trim(), index: match.index })
  }
  return found
}

/**
 * The numbers of an answer that could be its answer to a question with this gold value: numbers
 * the question itself states, and years named as a time, are context, unless the gold value is one.
 */
export const candidateNumbers = (answer: string, gold: ReadonlyArray<number>, question = ""): Array<StatedNumber> => {
  const goldHas = (value: number) => gold.some((g) => g === value)
  const asked = new Set(statedNumbers(question).map((n) => n.value))
  const goldYear = gold.some(isYear)
  const seen = new Set<string>()
  return statedNumbers(answer).filter((n) => {
    if (asked.has(n.value) && !goldHas(n.value)) return false
    if (!goldYear && !n.percent && isYear(n.value) && /^\d{4}$/.test(n.text) && YEAR_CONTEXT.test(answer.slice(Math.max(0, n.index - 12), n.index))) return false
    // Saying the same number twice is not listing several.
    const key = `${n.value}${n.percent ? "%" : ""}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** Whether a value is within tolerance of the gold one (the larger bound, plus float noise). */
export const withinTolerance = (value: number, gold: number, tolerance: Tolerance) => Math.abs(value - gold) <= Math.max(tolerance.abs, tolerance.rel * Math.abs(gold)) + 1e-12 * Math.abs(gold)

// Rounded to what the answer shows: the gold value rounded to the answer's step, with at least two significant digits shown.
const roundsTo = (n: StatedNumber, value: number, gold: number) => Math.abs(value) / n.step >= 10 && Math.abs(value - gold) <= n.step / 2 + 1e-9 * n.step

/** How well one stated number matches one gold value: 1 within tolerance, 0.5 when it is the gold rounded to its shown digits, else 0. */
export const numberScore = (n: StatedNumber, gold: number, tolerance: Tolerance): number => {
  const readings = n.percent ? [n.value, n.value / 100] : [n.value]
  if (readings.some((value) => withinTolerance(value, gold, tolerance))) return 1
  if (readings.some((value, i) => roundsTo(i === 0 ? n : { ...n, step: n.step / 100 }, value, gold))) return 0.5
  return 0
}

export interface NumberGrade {
  readonly score: number
  readonly detail: string
}

const show = (values: ReadonlyArray<StatedNumber>) => (values.length === 0 ? "no number" : values.map((n) => n.text).join(", "))

/**
 * Grades an answer against one gold value or a list of them. The answer must state exactly as many
 * candidate numbers as there are gold values: listing several numbers earns nothing, even if one is right.
 */
export const gradeNumbers = (answer: string, gold: number | ReadonlyArray<number>, options: { readonly tolerance?: Tolerance; readonly ordered?: boolean; readonly question?: string } = {}): NumberGrade => {
  const golds = typeof gold === "number" ? [gold] : [...gold]
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE
  const candidates = candidateNumbers(answer, golds, options.question)
  if (golds.length === 0) return { score: 0, detail: "the check names no gold value" }
  if (candidates.length !== golds.length) {
    return { score: 0, detail: `expected ${golds.length === 1 ? "one number" : `${golds.length} numbers`}, the answer states ${candidates.length} (${show(candidates)})` }
  }
  let total = 0
  if (options.ordered === true) {
    golds.forEach((g, i) => (total += numberScore(candidates[i]!, g, tolerance)))
  } else {
    // Best one-to-one pairing; lists are short (a check holds at most a few dozen values).
    const used = new Set<number>()
    for (const g of golds) {
      let best = -1
      let bestScore = 0
      candidates.forEach((c, i) => {
        if (used.has(i)) return
        const s = numberScore(c, g, tolerance)
        if (s > bestScore) [best, bestScore] = [i, s]
      })
      if (best >= 0) {
        used.add(best)
        total += bestScore
      }
    }
  }
  const score = total / golds.length
  return { score, detail: `${show(candidates)} against ${golds.join(", ")}${score === 1 ? "" : score > 0 ? " (partly, or only after rounding)" : ""}` }
}
