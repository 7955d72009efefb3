import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, scryptSync } from "node:crypto"
import * as path from "node:path"
import { ConfigError, Effect, Option, Redacted, Schema } from "effect"
import { readOrCreateSecretFile, replaceSecretFile } from "./SecretFile"
import { AppConfig } from "./AppConfig"

const VERSION = "v1"
const IV_BYTES = 12
const TAG_BYTES = 16
const FINGERPRINT_BYTES = 8
const KEY_FILE = ".encryption_key"
const SALT_FILE = ".encryption_salt"

/** Where a secret belongs: a ciphertext copied to another org or connection does not decrypt. */
export interface SecretOwner {
  readonly orgId: string
  readonly connectionId: string
}

export class CredentialUndecryptable extends Schema.TaggedError<CredentialUndecryptable>()("CredentialUndecryptable", {
  message: Schema.String
}) {}

interface DerivedKey {
  readonly key: Buffer
  readonly fingerprint: Buffer
}

const derive = (secret: string, salt: Buffer): DerivedKey => {
  const key = scryptSync(secret, salt, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 })
  return { key, fingerprint: createHash("sha256").update(key).digest().subarray(0, FINGERPRINT_BYTES) }
}

const aadOf = (owner: SecretOwner) => Buffer.from(`sluice:credential:${VERSION}:${owner.orgId}:${owner.connectionId}`)

const missing = (name: string, why: string) => Effect.fail(ConfigError.MissingData([name], why))

/**
 * AES-256-GCM for connection secrets, bound to their org and connection. The current key encrypts;
 * old keys (SP_ENCRYPTION_KEY_OLD) only decrypt, and say so, so callers can re-encrypt.
 */
export class CredentialCipher extends Effect.Service<CredentialCipher>()("sluice/CredentialCipher", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    if (!config.selfHosted && Option.isNone(config.encryptionKey)) {
      return yield* missing("SP_ENCRYPTION_KEY", "is required when SP_DEPLOYMENT_MODE=cloud")
    }
    if (!config.selfHosted && Option.isNone(config.encryptionSalt)) {
      return yield* missing("SP_ENCRYPTION_SALT", "is required when SP_DEPLOYMENT_MODE=cloud (every replica must derive the same key)")
    }
    const salt = Buffer.from(
      Option.match(config.encryptionSalt, {
        onSome: Redacted.value,
        onNone: () => readOrCreateSecretFile(path.join(config.dataDir, SALT_FILE), () => randomBytes(16).toString("hex"))
      })
    )
    const secret = Option.match(config.encryptionKey, {
      onSome: Redacted.value,
      onNone: () => readOrCreateSecretFile(path.join(config.dataDir, KEY_FILE), () => randomBytes(32).toString("base64url"))
    })
    const current = derive(secret, salt)
    const keys = [current, ...config.encryptionOldKeys.map((old) => derive(Redacted.value(old), salt))]

    const encrypt = (plaintext: string, owner: SecretOwner): string => {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv("aes-256-gcm", current.key, iv).setAAD(aadOf(owner))
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return `${VERSION}:${Buffer.concat([current.fingerprint, iv, cipher.getAuthTag(), body]).toString("base64url")}`
    }

    /** The plaintext, and whether it was under an old key (then re-encrypt it with `encrypt`). */
    const decrypt = (ciphertext: string, owner: SecretOwner) =>
      Effect.try({
        try: () => {
          const [version, payload] = ciphertext.split(":")
          if (version !== VERSION || payload === undefined) throw new Error("unknown format")
          const raw = Buffer.from(payload, "base64url")
          const fingerprint = raw.subarray(0, FINGERPRINT_BYTES)
          const key = keys.find((k) => k.fingerprint.equals(fingerprint))
          if (key === undefined) throw new Error("no key")
          const iv = raw.subarray(FINGERPRINT_BYTES, FINGERPRINT_BYTES + IV_BYTES)
          const tag = raw.subarray(FINGERPRINT_BYTES + IV_BYTES, FINGERPRINT_BYTES + IV_BYTES + TAG_BYTES)
          const decipher = createDecipheriv("aes-256-gcm", key.key, iv).setAAD(aadOf(owner)).setAuthTag(tag)
          const body = raw.subarray(FINGERPRINT_BYTES + IV_BYTES + TAG_BYTES)
          const plaintext = Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8")
          return { plaintext, stale: key !== current }
        },
        // Never the cause: it could carry key or ciphertext material into a log.
        catch: () =>
          new CredentialUndecryptable({
            message: "A stored credential cannot be decrypted with SP_ENCRYPTION_KEY or SP_ENCRYPTION_KEY_OLD; enter it again"
          })
      })

    const probe = randomBytes(16).toString("hex")
    const owner = { orgId: "self-check", connectionId: "self-check" }
    const checked = yield* decrypt(encrypt(probe, owner), owner).pipe(Effect.orDie)
    if (checked.plaintext !== probe) return yield* Effect.dieMessage("credential encryption self-check failed")

    /** A per-org secret derived from the current key, for values that must be stable within an org and unguessable outside it. */
    const orgSecret = (label: string, orgId: string) => createHmac("sha256", current.key).update(`sluice:${label}:${orgId}`).digest()

    /**
     * Self-hosted, after every secret was re-encrypted under SP_ENCRYPTION_KEY: the data dir's key
     * file takes that key, so a later start without the variable opens them (it would read the old
     * key from the file). True when the file changed.
     */
    const adoptCurrentKey = Effect.sync(() =>
      config.selfHosted && Option.isSome(config.encryptionKey)
        ? replaceSecretFile(path.join(config.dataDir, KEY_FILE), Redacted.value(config.encryptionKey.value))
        : false
    )

    return { encrypt, decrypt, orgSecret, adoptCurrentKey } as const
  })
}) {}
