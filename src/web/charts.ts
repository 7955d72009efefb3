export interface HourCounts {
  readonly hour: number
  readonly success: number
  readonly refused: number
  readonly error: number
}

/** Every hour from `since` to now, with zeros where the audit log has no rows (the API sends only hours with rows). */
export const hourlySeries = (rows: ReadonlyArray<HourCounts>, since: number, now: number): ReadonlyArray<HourCounts> => {
  const byHour = new Map(rows.map((r) => [r.hour, r]))
  const series: Array<HourCounts> = []
  for (let hour = Math.floor(since / 3600) * 3600; hour <= now; hour += 3600) {
    series.push(byHour.get(hour) ?? { hour, success: 0, refused: 0, error: 0 })
  }
  return series
}

/** A round upper bound for a chart's axis: 1, 2 or 5 times a power of ten, at least the largest value. */
export const niceMax = (largest: number): number => {
  if (largest <= 0) return 1
  const power = 10 ** Math.floor(Math.log10(largest))
  return ([1, 2, 5, 10].map((step) => step * power).find((candidate) => candidate >= largest) ?? 10 * power)
}
