import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { KEY_PREFIX_LENGTH } from "../domain/ApiKey"

/** `sp_` + 32 lowercase hex from the CSPRNG. */
export const generateRawKey = (): string => `sp_${randomBytes(16).toString("hex")}`

export const hashKey = (raw: string): string => createHash("sha256").update(raw).digest("hex")

export const keyPrefix = (raw: string): string => raw.slice(0, KEY_PREFIX_LENGTH)

export const hashesEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a, "hex")
  const right = Buffer.from(b, "hex")
  return left.length === right.length && timingSafeEqual(left, right)
}
