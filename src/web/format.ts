/** A time as the reader's locale writes it, to the minute. */
export const formatTime = (time: Date | number) =>
  (typeof time === "number" ? new Date(time * 1000) : time).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })

/** A cell of a result grid: null shown as such, objects as JSON. */
export const formatCell = (value: unknown): string =>
  value === null || value === undefined ? "NULL" : typeof value === "object" ? JSON.stringify(value) : String(value)
