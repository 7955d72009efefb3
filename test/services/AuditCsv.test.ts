import { describe, expect, it } from "vitest"
import { csvCell } from "../../src/services/Audit"

describe("csvCell", () => {
  it.each([
    ["plain", "plain"],
    ["=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"],
    ["+1", "'+1"],
    ["-1", "'-1"],
    ["@SUM(A1)", "'@SUM(A1)"],
    ["\tx", "'\tx"],
    ['a,"b"', '"a,""b"""'],
    ["=a,b", "\"'=a,b\""],
    [null, ""],
    [42, "42"]
  ])("%j → %j", (input, expected) => {
    expect(csvCell(input)).toBe(expected)
  })
})
