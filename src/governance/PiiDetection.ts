import type { PiiAction } from "../domain/Pii"

export type PiiKind = "email" | "phone" | "ssn" | "card" | "iban" | "ip" | "person_name" | "address" | "birth_date" | "secret"

const ACTION: Record<PiiKind, PiiAction> = {
  email: "mask",
  phone: "mask",
  ssn: "redact",
  card: "redact",
  iban: "redact",
  ip: "hash",
  person_name: "mask",
  address: "redact",
  birth_date: "redact",
  secret: "drop"
}

// Column names, matched on the whole name split at `_`: "email", "work_email", "email_address".
const BY_NAME: ReadonlyArray<[PiiKind, RegExp]> = [
  ["email", /(^|_)(e_?mail|email_address)(_|$)/],
  ["phone", /(^|_)(phone|mobile|cell|tel|telephone|fax|msisdn)(_|$)/],
  ["ssn", /(^|_)(ssn|social_security|national_id|nin|sin|tax_id|tin)(_|$)/],
  ["card", /(^|_)(card_number|cc_number|credit_card|pan|card_no)(_|$)/],
  ["iban", /(^|_)(iban|bank_account|account_number)(_|$)/],
  ["ip", /(^|_)(ip|ip_address|ipv4|ipv6|remote_addr)(_|$)/],
  ["person_name", /(^|_)(first_name|last_name|full_name|surname|given_name|family_name|middle_name)(_|$)/],
  ["address", /(^|_)(address|street|street_address|address_line\d?|postal_code|postcode|zip|zip_code)(_|$)/],
  ["birth_date", /(^|_)(dob|birth_date|date_of_birth|birthday|birthdate)(_|$)/],
  ["secret", /(^|_)(password|passwd|password_hash|secret|api_key|access_token|refresh_token)(_|$)/]
]

// A bare "name" is a person's name only in a table of people.
const PEOPLE_TABLE = /(^|_)(customer|user|employee|person|people|contact|patient|member|client|student|account_holder)s?$/

const luhn = (digits: string) => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i])
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2
    sum += d
  }
  return sum % 10 === 0
}

const ibanValid = (value: string) => {
  const compact = value.replace(/\s/g, "").toUpperCase()
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(compact)) return false
  const rearranged = compact.slice(4) + compact.slice(0, 4)
  const numeric = rearranged.replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55))
  let remainder = 0
  for (const digit of numeric) remainder = (remainder * 10 + Number(digit)) % 97
  return remainder === 1
}

// Dates and times written as text (2024-01-05, 30.11.2023, 2024-01-05 10:00): digits and separators that look like a phone number.
const DATE_SHAPE = /^(\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4})([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?$/

/** Types whose values are never free text: what a date, number or flag column holds only looks like a phone number or a card. */
const NOT_TEXT = /date|time|interval|int|serial|numeric|decimal|number|float|double|real|money|bool|bit|uuid|json|bytea|blob|binary/i

const BY_VALUE: ReadonlyArray<[PiiKind, (value: string) => boolean]> = [
  ["email", (v) => /^[^\s@]+@[^\s@]+\.[A-Za-z]{2,}$/.test(v)],
  ["ssn", (v) => /^\d{3}-\d{2}-\d{4}$/.test(v)],
  ["card", (v) => /^(\d[ -]?){12,18}\d$/.test(v) && luhn(v.replace(/\D/g, ""))],
  ["iban", ibanValid],
  ["ip", (v) => /^(\d{1,3})(\.\d{1,3}){3}$/.test(v) || (/^[0-9a-f:]+$/i.test(v) && v.split(":").length >= 3)],
  // A separator or a leading + tells a phone number from any long number.
  ["phone", (v) => /^\+?[\d\s().-]{7,20}$/.test(v) && /[+\s().-]/.test(v) && !DATE_SHAPE.test(v) && v.replace(/\D/g, "").length >= 7 && v.replace(/\D/g, "").length <= 15]
]

export interface PiiFinding {
  readonly kind: PiiKind
  readonly action: PiiAction
  readonly reason: "column_name" | "sampled_values"
  /** For sampled values: the share of non-empty samples that matched. */
  readonly confidence: number
}

/** What a column's name says, or what at least half of its sampled values look like (for a column whose `type` can hold text). */
export const detectColumn = (table: string, column: string, samples: ReadonlyArray<unknown>, type = "text"): PiiFinding | undefined => {
  const name = column.toLowerCase()
  const byName = BY_NAME.find(([, pattern]) => pattern.test(name))?.[0] ?? (name === "name" && PEOPLE_TABLE.test(table.toLowerCase()) ? "person_name" : undefined)
  if (byName !== undefined) return { kind: byName, action: ACTION[byName], reason: "column_name", confidence: 1 }
  // Only text is sampled for patterns: numbers (ids, amounts, timestamps) would look like phones and cards.
  if (NOT_TEXT.test(type)) return undefined
  const values = samples.filter((v): v is string => typeof v === "string" && v.trim() !== "").map((v) => v.trim())
  if (values.length === 0) return undefined
  for (const [kind, test] of BY_VALUE) {
    const share = values.filter(test).length / values.length
    if (share >= 0.5) return { kind, action: ACTION[kind], reason: "sampled_values", confidence: Number(share.toFixed(2)) }
  }
  return undefined
}
