/** A number an answer states: its value as written (a percentage's number of percent), the step its digits show, its text. */
export interface StatedNumber {
  readonly value: number
  /** The smallest step the answer's digits show, in the value's unit (1.2k shows steps of 100). */
  readonly step: number
  readonly percent: boolean
  /**
   * How it counts: `value` a number; `bound` one side of an inequality ("more than 1,000"), which
   * answers nothing; `unreadable` digits the grader cannot read (full-width, superscript, 1e999),
   * which count as a candidate that matches nothing, so hiding a second answer in them earns nothing.
   */
  readonly kind: "value" | "bound" | "unreadable"
  readonly text: string
  readonly index: number
}

/** How far a stated number may be from the gold value: the larger of the two bounds. */
export interface Tolerance {
  readonly abs: number
  readonly rel: number
}

// Relative, not Spider 2.0's absolute 0.01, which calls 0.04 right for 0.05; an answer rounded further scores 0.5 (roundsTo).
export const DEFAULT_TOLERANCE: Tolerance = { abs: 0, rel: 1e-4 }
/** Counts and ids: a gold integer with no tolerance of its own is matched exactly (98,774 orders is not 98,765). */
export const EXACT: Tolerance = { abs: 0, rel: 0 }

/** The tolerance a gold value is held to: the check's own, else exact for integers and DEFAULT_TOLERANCE otherwise. */
export const toleranceFor = (gold: number, given: Tolerance | undefined) => given ?? (Number.isInteger(gold) ? EXACT : DEFAULT_TOLERANCE)

/** Whether a value is within tolerance of the gold one (the larger bound, plus floating-point noise). */
export const withinTolerance = (value: number, gold: number, tolerance: Tolerance) =>
  Math.abs(value - gold) <= Math.max(tolerance.abs, tolerance.rel * Math.abs(gold)) + 8 * Number.EPSILON * Math.max(1, Math.abs(value), Math.abs(gold))

const SCALES: Record<string, number> = {
  k: 1e3, thousand: 1e3, hundred: 1e2, m: 1e6, mn: 1e6, million: 1e6, b: 1e9, bn: 1e9, billion: 1e9, t: 1e12, trillion: 1e12
}
const ORDINAL = new Set(["st", "nd", "rd", "th"])

const MONTH = "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?![a-z])\\.?"
const YEAR = "(?:19|20)\\d{2}"
// Dates and times are not quantities.
const DATES = new RegExp(
  [
    "\\d{4}-\\d{1,2}-\\d{1,2}(?:[T ]\\d{1,2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:Z|[+-]\\d{2}:?\\d{2})?)?",
    "\\d{1,2}/\\d{1,2}/\\d{2,4}",
    "\\d{1,2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?",
    `\\b${MONTH}\\s+\\d{1,2}(?:st|nd|rd|th)?,?\\s+${YEAR}\\b`,
    `\\b\\d{1,2}(?:st|nd|rd|th)?\\s+${MONTH}\\s+${YEAR}\\b`,
    `\\b${MONTH}\\s+${YEAR}\\b`
  ].join("|"),
  "gi"
)
// Markdown emphasis around a number (_42_, **42**, __42__) is not part of it.
const EMPHASIS = /(?<![\p{L}\p{N}])[_*]{1,3}(?=[\p{N}$€£¥.\-−–])|(?<=[\p{N}%])[_*]{1,3}(?![\p{L}\p{N}])/gu
const YEAR_RANGE = new RegExp(`\\b${YEAR}\\s*[-–]\\s*${YEAR}\\b`, "g")
// Code the answer shows is how it got there, not what it says: fenced blocks with a language, inline SQL, links, list markers.
const CODE_AND_LINKS = /```[ \t]*[A-Za-z][\w+-]*[^\n]*\n[\s\S]*?(?:```|$)|\bhttps?:\/\/[^\s)>\]]+|^[ \t]*\d{1,3}[.)][ \t]/gim
// Inline code is found whole first, then looked into: one pattern doing both backtracked over every SQL word of an unclosed span (quadratic).
const INLINE_CODE = /`[^`\n]*`/g
const SQL_WORD = /\b(?:select|from|where|join|group\s+by|order\s+by|limit)\b/i
// A year named as a time ("in 2023", "between 2021 and 2023", "Q3 2023") when the gold value is not itself a year.
const YEAR_CONTEXT = /(?:\b(?:in|for|during|since|until|through|year|of|fy|between|and|to|from|q[1-4]|h[12])\s*)$/i
const BOUND = /(?:\b(?:more|greater|higher|fewer|less|lower)\s+than|\b(?:over|above|under|below|at\s+least|at\s+most|up\s+to|nearly|almost|exceeding)|[<>≤≥]=?)\s*$/i
const NEGATED = /\b(?:minus|negative)\s+$/i
const DASH_BEFORE = /[-−–‒﹣－]$/
const SPELLED_HEDGE =
  /\b(?:or|to|maybe|perhaps|possibly|probably)\s+\(?\s*(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion)\b/gi
const SIGN = "[-−–‒﹣－+]"
const NUMBER = new RegExp(
  `(?<![\\p{L}\\p{N}_.,])(${SIGN}?)([$€£¥]?)[ \\u00a0]?(${SIGN}?)(\\d{1,3}(?:[,\\u00a0\\u202f\\u2009]\\d{3})+(?:\\.\\d+)?|\\d+(?:\\.\\d+)?|\\.\\d+)(?:e([-+]?\\d{1,4}))?` +
    `(?:([ \\u00a0]?(?:%|percent\\b|per\\s+cent\\b|pct\\b))|[ \\u00a0]?(thousand|million|billion|trillion|hundred|bn|mn)\\b|([kmbt])(?![\\p{L}\\p{N}_])|(\\p{L}{1,5})(?![\\p{L}\\p{N}_]))?(?![\\p{L}\\p{N}_]|[.,]\\d)`,
  "giu"
)

const isYear = (value: number) => Number.isInteger(value) && value >= 1900 && value <= 2100
const blank = (text: string, pattern: RegExp) => text.replace(pattern, (found) => " ".repeat(found.length))

/**
 * The numbers a text states. Dates, times, code, links and list markers are left out, and so are
 * identifiers (Q3, order_12, v1.2) and ordinals; a number after a dash, "minus" or "negative" is
 * negative; digits the grader cannot read are kept as unreadable, never dropped.
 */
export const statedNumbers = (text: string, options: { readonly yearRanges?: boolean } = {}): Array<StatedNumber> => {
  const withoutSql = text.replace(INLINE_CODE, (code) => (SQL_WORD.test(code) ? " ".repeat(code.length) : code))
  let masked = blank(blank(blank(withoutSql, CODE_AND_LINKS), DATES), EMPHASIS)
  if (options.yearRanges === true) masked = blank(masked, YEAR_RANGE)
  const found: Array<StatedNumber> = []
  const consumed = new Uint8Array(masked.length)
  for (const match of masked.matchAll(NUMBER)) {
    const [whole, sign1 = "", , sign2 = "", digits = "", exponent, percent, word, letter, unit] = match
    const index = match.index
    consumed.fill(1, index, index + whole.length)
    if (unit !== undefined && ORDINAL.has(unit.toLowerCase())) continue
    const before = masked.slice(Math.max(0, index - 24), index)
    const minus = (sign: string) => sign !== "" && sign !== "+"
    const negative = (minus(sign1) !== minus(sign2)) !== (sign1 === "" && sign2 === "" && (DASH_BEFORE.test(before) || NEGATED.test(before)))
    const plain = digits.replace(/[,\u00a0\u202f\u2009]/g, "")
    const decimals = plain.includes(".") ? plain.length - plain.indexOf(".") - 1 : 0
    const scale = SCALES[(word ?? letter ?? "").toLowerCase()] ?? 1
    const power = exponent === undefined ? 0 : Number(exponent)
    const value = Number(plain) * 10 ** power * scale * (negative ? -1 : 1)
    const kind = !Number.isFinite(value) ? "unreadable" : BOUND.test(before) ? "bound" : "value"
    found.push({ value, step: 10 ** (power - decimals) * scale, percent: percent !== undefined, kind, text: whole.trim(), index })
  }
  // Digits left unread: a token that starts with a letter or _ is an identifier, an ordinal is a rank; anything else hides a number.
  for (const token of masked.matchAll(/\S+/gu)) {
    const start = token.index
    const rest = [...token[0]].map((ch, i) => (consumed[start + i] === 1 ? " " : ch)).join("")
    if (!/\p{N}/u.test(rest)) continue
    const first = rest.trim()
    if (/^[\p{L}_]/u.test(first) || /^\d+(?:st|nd|rd|th)\b/i.test(first)) continue
    found.push({ value: Number.NaN, step: 1, percent: false, kind: "unreadable", text: first, index: start })
  }
  for (const hedge of masked.matchAll(SPELLED_HEDGE)) {
    found.push({ value: Number.NaN, step: 1, percent: false, kind: "unreadable", text: hedge[0], index: hedge.index })
  }
  return found.sort((a, b) => a.index - b.index)
}

/** What a stated number means against gold values in `unit`: a percentage is its fraction unless the gold is in percent. */
const reading = (n: StatedNumber, unit: "percent" | undefined) =>
  n.percent && unit !== "percent" ? { value: n.value / 100, step: n.step / 100 } : { value: n.value, step: n.step }

// Rounded to what the answer shows: the gold value rounded to the answer's step, with at least two significant digits shown.
const roundsTo = (shown: { readonly value: number; readonly step: number }, gold: number) =>
  Math.abs(shown.value) / shown.step >= 10 && Math.abs(shown.value - gold) <= shown.step / 2 + 1e-9 * shown.step

/**
 * The numbers of an answer that could be its answer to a question with these gold values: numbers
 * the question itself states, years named as a time, and bounds are context, unless the gold value is one.
 */
export const candidateNumbers = (answer: string, gold: ReadonlyArray<number>, question = ""): Array<StatedNumber> => {
  const goldHas = (value: number) => gold.some((g) => g === value)
  const asked = new Set(statedNumbers(question).map((n) => n.value))
  const goldYear = gold.some(isYear)
  return statedNumbers(answer, { yearRanges: !goldYear }).filter((n) => {
    if (n.kind === "bound") return false
    if (n.kind === "unreadable") return true
    if (asked.has(n.value) && !goldHas(n.value)) return false
    if (!goldYear && !n.percent && isYear(n.value) && /^\d{4}$/.test(n.text) && YEAR_CONTEXT.test(answer.slice(Math.max(0, n.index - 12), n.index))) return false
    return true
  })
}

/**
 * One statement said twice is one candidate: the same value again ("42 (42 exactly)", "0.42 (42%)"),
 * or a coarser rounding of another candidate ("$1,234,567 (about $1.23 million)"); as many copies are
 * kept as the gold list holds of that value.
 */
const restatementsMerged = (candidates: ReadonlyArray<StatedNumber>, gold: ReadonlyArray<number>, unit: "percent" | undefined) => {
  const kept: Array<StatedNumber> = []
  // Finest first, so a rounding meets what it rounds.
  for (const candidate of candidates.filter((c) => c.kind === "value").sort((a, b) => reading(a, unit).step - reading(b, unit).step)) {
    const shown = reading(candidate, unit)
    const said = kept.filter((k) => reading(k, unit).value === shown.value || roundsTo(shown, reading(k, unit).value))
    const wanted = Math.max(1, gold.filter((g) => g === shown.value).length)
    if (said.length === 0 || (said.length < wanted && said.every((k) => reading(k, unit).value === shown.value))) kept.push(candidate)
  }
  return [...kept, ...candidates.filter((c) => c.kind !== "value")].sort((a, b) => a.index - b.index)
}

/** How well one stated number matches one gold value: 1 within tolerance, 0.5 when it is the gold rounded to its shown digits, else 0. */
export const numberScore = (n: StatedNumber, gold: number, tolerance: Tolerance | undefined, unit?: "percent"): number => {
  if (n.kind !== "value") return 0
  const shown = reading(n, unit)
  if (withinTolerance(shown.value, gold, toleranceFor(gold, tolerance))) return 1
  return roundsTo(shown, gold) ? 0.5 : 0
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
export const gradeNumbers = (
  answer: string,
  gold: number | ReadonlyArray<number>,
  options: { readonly tolerance?: Tolerance; readonly ordered?: boolean; readonly question?: string; readonly unit?: "percent" } = {}
): NumberGrade => {
  const golds = typeof gold === "number" ? [gold] : [...gold]
  if (golds.length === 0) return { score: 0, detail: "the check names no gold value" }
  const candidates = restatementsMerged(candidateNumbers(answer, golds, options.question), golds, options.unit)
  if (candidates.length !== golds.length) {
    return { score: 0, detail: `expected ${golds.length === 1 ? "one number" : `${golds.length} numbers`}, the answer states ${candidates.length} (${show(candidates)})` }
  }
  const score = (c: StatedNumber, g: number) => numberScore(c, g, options.tolerance, options.unit)
  let total = 0
  if (options.ordered === true) {
    golds.forEach((g, i) => (total += score(candidates[i]!, g)))
  } else {
    // Best one-to-one pairing, greedily: lists are short, and a greedy pairing never credits more than the best one.
    const used = new Set<number>()
    for (const g of golds) {
      let best = -1
      let bestScore = 0
      candidates.forEach((c, i) => {
        if (used.has(i)) return
        const s = score(c, g)
        if (s > bestScore) [best, bestScore] = [i, s]
      })
      if (best >= 0) {
        used.add(best)
        total += bestScore
      }
    }
  }
  const result = total / golds.length
  return { score: result, detail: `${show(candidates)} against ${golds.join(", ")}${result === 1 ? "" : result > 0 ? " (partly, or only after rounding)" : ""}` }
}
