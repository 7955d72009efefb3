import { Schema } from "effect"

/** The store's text cannot hold NUL: refused as input rather than failing a write later. */
export const noNul =
  (field: string) =>
  <I, R>(self: Schema.Schema<string, I, R>) =>
    self.pipe(Schema.filter((text) => !text.includes("\u0000") || `${field} must not contain NUL bytes`))

/** Text a person writes that the store keeps: not empty, at most `max` characters, no NUL. */
export const StoredText = (field: string, max: number) =>
  Schema.String.pipe(
    Schema.minLength(1, { message: () => `${field} is required` }),
    Schema.maxLength(max, { message: () => `${field} must be at most ${max} characters` }),
    noNul(field)
  )

/** An id this API gave out (runs, conversations, queries), as a path or query parameter. */
export const ResourceId = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,100}$/, { message: () => "not an id this API gives out" }))

/**
 * Text kept as evidence with what looks like a credential replaced: Sluice keys, the password of a
 * URL, bearer tokens, and private key blocks. A transcript quotes what a model and the tools wrote,
 * which can repeat a secret a prompt or a row held.
 */
export const withoutSecrets = (text: string): string =>
  text
    .replace(/\bsp_[0-9a-f]{32}\b/g, "sp_[redacted]")
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*):[^\s/@]+@/gi, "$1:[redacted]@")
    .replace(/\b(bearer\s+)[A-Za-z0-9._~+/-]{8,}=*/gi, "$1[redacted]")
    .replace(/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g, "[redacted private key]")
