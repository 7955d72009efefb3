import { describe, expect, it } from "vitest"
import { fromDriverError } from "../../../layers/connectors/DriverErrors"

const asIs = (message: string) => message
const failed = (error: unknown) => fromDriverError(error, asIs, "query")

describe("a driver's error as the gateway reads it", () => {
  it("marks a value the database could not compute, whatever the engine calls it", () => {
    const data = [
      Object.assign(new Error('invalid input syntax for type integer: "DE"'), { code: "22P02" }),
      Object.assign(new Error("division by zero"), { code: "22012" }),
      Object.assign(new Error("Out of range value for column"), { code: "ER_DATA_OUT_OF_RANGE", sqlState: "22003" }),
      new Error("Conversion Error: Could not convert string 'DE' to INT32"),
      new Error("Out of Range Error: Overflow in multiplication of INT32"),
      Object.assign(new Error("malformed JSON"), { code: "SQLITE_ERROR" }),
      Object.assign(new Error("Cannot cast 'x' to INT"), { errorName: "INVALID_CAST_ARGUMENT" })
    ]
    for (const error of data) expect([error.message, failed(error).data]).toEqual([error.message, true])
    const other = [
      Object.assign(new Error('column "emial" does not exist'), { code: "42703" }),
      Object.assign(new Error("more than one row returned by a subquery used as an expression"), { code: "21000" }),
      new Error("Invalid Input Error: More than one row returned by a subquery used as an expression"),
      new Error('Binder Error: Referenced column "x" not found')
    ]
    for (const error of other) expect([error.message, failed(error).data]).toEqual([error.message, undefined])
    // A login that fails is never a statement's value.
    expect(fromDriverError(Object.assign(new Error("bad"), { code: "22023" }), asIs, "connect").data).toBeUndefined()
  })
})
