/** Words that say nothing about what a question is after, in questions people and agents write. */
export const PROSE_STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a an and are as at be by can do does for from get give had has have how i in into is it its me my of on or per " +
    "please tell than that the their them there these this those to was we were what when where which who whom whose " +
    "why will with all any each every many much most some find display return see want need our your"
  ).split(" ")
)

/** Identifier and prose to words: `customerOrders_2024` → customer, orders, 2024. */
export const words = (text: string): Array<string> =>
  text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0)

/** Plural to singular, enough for names: categories → category, addresses → address, orders → order. */
export const stem = (word: string): string => {
  if (word.length <= 3) return word
  if (word.endsWith("ies")) return `${word.slice(0, -3)}y`
  if (/(ss|x|ch|sh)es$/.test(word)) return word.slice(0, -2)
  if (word.endsWith("s") && !word.endsWith("ss") && !word.endsWith("us") && !word.endsWith("is")) return word.slice(0, -1)
  return word
}
