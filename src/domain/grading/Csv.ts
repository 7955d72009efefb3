import type { Cell, Table } from "./Tables"

// A gold CSV holds what an inline gold table may: parsing stops at the first row or field past these.
export const CSV_MAX_ROWS = 10_000
export const CSV_MAX_COLUMNS = 100
export const CSV_MAX_FIELD = 10_000

/**
 * A gold table from CSV (RFC 4180: quoted fields, doubled quotes, CRLF or LF): the first line names
 * the columns; an empty unquoted field is NULL, a quoted empty one the empty string. Throws on a
 * malformed file, saying where.
 */
export const parseCsv = (text: string): Table => {
  const rows: Array<Array<Cell>> = []
  let row: Array<Cell> = []
  let field = ""
  let quoted = false
  let inQuotes = false
  let line = 1
  const endField = () => {
    if (field.length > CSV_MAX_FIELD) throw new Error(`line ${line}: a field of more than ${CSV_MAX_FIELD} characters`)
    if (row.length >= CSV_MAX_COLUMNS) throw new Error(`line ${line}: more than ${CSV_MAX_COLUMNS} fields`)
    row.push(!quoted && field === "" ? null : field)
    field = ""
    quoted = false
  }
  const endRow = () => {
    if (rows.length > CSV_MAX_ROWS) throw new Error(`more than ${CSV_MAX_ROWS} rows`)
    rows.push(row)
    row = []
  }
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!
    if (inQuotes) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"'
        i++
      } else if (ch === '"') {
        inQuotes = false
        const next = text[i + 1]
        if (next !== undefined && next !== "," && next !== "\n" && next !== "\r") throw new Error(`line ${line}: a quoted field is followed by ${JSON.stringify(next)}`)
      } else {
        if (ch === "\n") line++
        field += ch
      }
    } else if (ch === '"') {
      if (field !== "") throw new Error(`line ${line}: a quote inside an unquoted field`)
      inQuotes = quoted = true
    } else if (ch === ",") {
      endField()
    } else if (ch === "\n" || ch === "\r") {
      if (ch === "\r" && text[i + 1] === "\n") i++
      endField()
      endRow()
      line++
    } else {
      field += ch
    }
  }
  if (inQuotes) throw new Error(`line ${line}: a quoted field is never closed`)
  if (field !== "" || quoted || row.length > 0) {
    endField()
    endRow()
  }
  const [header, ...body] = rows
  if (header === undefined || header.length === 0) throw new Error("the file has no header line")
  const columns = header.map((c, i) => {
    if (typeof c !== "string" || c === "") throw new Error(`column ${i + 1} of the header has no name`)
    return c
  })
  body.forEach((r, i) => {
    if (r.length !== columns.length) throw new Error(`line ${i + 2}: ${r.length} fields, the header has ${columns.length}`)
  })
  return { columns, rows: body }
}
