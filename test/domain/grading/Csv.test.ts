import { describe, expect, it } from "vitest"
import { parseCsv } from "../../../src/domain/grading/Csv"

describe("gold tables from CSV", () => {
  it("reads quoted fields, doubled quotes, CRLF and NULL as an empty unquoted field", () => {
    expect(parseCsv('id,name,note\r\n1,"Ada, Lady","said ""hi"""\r\n2,,""\r\n')).toEqual({
      columns: ["id", "name", "note"],
      rows: [
        ["1", "Ada, Lady", 'said "hi"'],
        ["2", null, ""]
      ]
    })
    expect(parseCsv("a\n1\n2")).toEqual({ columns: ["a"], rows: [["1"], ["2"]] })
    expect(parseCsv('a,b\n"x\ny",1\n')).toEqual({ columns: ["a", "b"], rows: [["x\ny", "1"]] })
  })

  it("says where a malformed file goes wrong", () => {
    expect(() => parseCsv("")).toThrow(/no header/)
    expect(() => parseCsv("a,b\n1\n")).toThrow(/line 2: 1 fields, the header has 2/)
    expect(() => parseCsv('a\n"open\n')).toThrow(/never closed/)
    expect(() => parseCsv('a\n"x"y\n')).toThrow(/line 2: a quoted field is followed by "y"/)
    expect(() => parseCsv('a\nx"y\n')).toThrow(/quote inside an unquoted field/)
    expect(() => parseCsv("a,\n1,2\n")).toThrow(/column 2 of the header has no name/)
  })
})
