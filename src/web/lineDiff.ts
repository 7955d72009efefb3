/** One line of a diff: kept, removed (only in the older text) or added (only in the newer). */
export interface DiffLine {
  readonly kind: "same" | "removed" | "added"
  readonly text: string
}

/** The lines that changed from `before` to `after`, by their longest common subsequence. */
export const lineDiff = (before: string, after: string): ReadonlyArray<DiffLine> => {
  const a = before.split("\n")
  const b = after.split("\n")
  // common[i][j]: the longest common subsequence of a[i..] and b[j..].
  const common = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
  for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--) common[i]![j] = a[i] === b[j] ? common[i + 1]![j + 1]! + 1 : Math.max(common[i + 1]![j]!, common[i]![j + 1]!)
  const lines: Array<DiffLine> = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) lines.push({ kind: "same", text: a[i++]! }), j++
    else if (common[i + 1]![j]! >= common[i]![j + 1]!) lines.push({ kind: "removed", text: a[i++]! })
    else lines.push({ kind: "added", text: b[j++]! })
  }
  for (; i < a.length; i++) lines.push({ kind: "removed", text: a[i]! })
  for (; j < b.length; j++) lines.push({ kind: "added", text: b[j]! })
  return lines
}
