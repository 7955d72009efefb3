import { describe, expect, it } from "vitest"
import { detectColumn } from "../../src/governance/PiiDetection"

const kindOf = (table: string, column: string, samples: Array<unknown> = []) => detectColumn(table, column, samples)?.kind

describe("PII detection", () => {
  it("reads column names on word boundaries, and a bare name only in a table of people", () => {
    expect(kindOf("t", "email")).toBe("email")
    expect(kindOf("t", "billing_email_address")).toBe("email")
    expect(kindOf("t", "emailed_at")).toBeUndefined()
    expect(kindOf("t", "date_of_birth")).toBe("birth_date")
    expect(kindOf("t", "password_hash")).toBe("secret")
    expect(kindOf("customers", "name")).toBe("person_name")
    expect(kindOf("products", "name")).toBeUndefined()
    expect(kindOf("t", "zip")).toBe("address")
    expect(kindOf("t", "ship")).toBeUndefined()
  })

  it("recognises sampled values, with checksums for cards and IBANs", () => {
    expect(kindOf("t", "c", ["4111111111111111", "5500 0000 0000 0004"])).toBe("card")
    expect(kindOf("t", "c", ["4111111111111112", "1234567812345678"])).toBeUndefined()
    expect(kindOf("t", "c", ["GB82 WEST 1234 5698 7654 32", "DE89370400440532013000"])).toBe("iban")
    expect(kindOf("t", "c", ["GB00WEST12345698765432"])).toBeUndefined()
    expect(kindOf("t", "c", ["078-05-1120", "219-09-9999"])).toBe("ssn")
    expect(kindOf("t", "c", ["+1 (555) 010-9999", "+44 20 7946 0958"])).toBe("phone")
    expect(kindOf("t", "c", ["10.0.0.1", "fe80::1"])).toBe("ip")
  })

  it("needs half of the non-empty text samples to match, and never reads numbers as phones or cards", () => {
    expect(kindOf("t", "c", ["a@b.io", "nope", "", null, "x@y.org"])).toBe("email")
    expect(kindOf("t", "c", ["a@b.io", "nope", "still nope"])).toBeUndefined()
    expect(kindOf("t", "c", [15551234567, 4111111111111111])).toBeUndefined()
    expect(kindOf("t", "c", ["1700000000", "1700000123"])).toBeUndefined()
  })

  it("never reads dates as phone numbers: not in a date, time or number column, nor written as text", () => {
    for (const type of ["date", "timestamptz", "timestamp without time zone", "int8", "numeric", "DATETIME", "uuid"]) {
      expect(detectColumn("t", "c", ["+1 (555) 010-9999", "+44 20 7946 0958"], type), type).toBeUndefined()
    }
    expect(detectColumn("t", "c", ["+1 (555) 010-9999", "+44 20 7946 0958"], "varchar")?.kind).toBe("phone")
    expect(kindOf("t", "c", ["2024-01-05", "2023-11-30", "30.11.2023", "01-05-2024", "2024-01-05 10:00:00"])).toBeUndefined()
    expect(kindOf("t", "c", ["555-010-9999", "020 7946 0958"])).toBe("phone")
  })
})
