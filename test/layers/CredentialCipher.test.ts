import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ConfigProvider, Effect, Either, Layer } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { AppConfig } from "../../layers/AppConfig"
import { CredentialCipher } from "../../layers/CredentialCipher"

const dirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-cipher-"))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const cipherWith = (env: Record<string, string>) =>
  Effect.runPromise(
    Effect.either(
      Effect.provide(
        CredentialCipher,
        CredentialCipher.Default.pipe(
          Layer.provide(AppConfig.Default),
          Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
        )
      )
    )
  )
const cipher = async (env: Record<string, string>) => {
  const result = await cipherWith(env)
  if (Either.isLeft(result)) throw new Error(String(result.left))
  return result.right
}
const decrypt = (c: CredentialCipher, text: string, owner: { orgId: string; connectionId: string }) =>
  Effect.runPromise(Effect.either(c.decrypt(text, owner)))

const OWNER = { orgId: "org_a", connectionId: "conn_1" }

describe("credential encryption at rest", () => {
  it("self-hosted without a key makes a key and a salt file (mode 600) once, and a restart decrypts", async () => {
    const dataDir = tempDir()
    const first = await cipher({ SP_DATA_DIR: dataDir })
    for (const file of [".encryption_key", ".encryption_salt"]) {
      expect(fs.statSync(path.join(dataDir, file)).mode & 0o777, file).toBe(0o600)
    }
    const keyBytes = fs.readFileSync(path.join(dataDir, ".encryption_key"))
    const sealed = first.encrypt("s3cret-password", OWNER)
    expect(sealed).toMatch(/^v1:[\w-]+$/)
    expect(sealed).not.toContain("s3cret")
    expect(first.encrypt("s3cret-password", OWNER)).not.toBe(sealed)

    const second = await cipher({ SP_DATA_DIR: dataDir })
    expect(fs.readFileSync(path.join(dataDir, ".encryption_key"))).toEqual(keyBytes)
    const opened = await decrypt(second, sealed, OWNER)
    expect(opened).toEqual(Either.right({ plaintext: "s3cret-password", stale: false }))
  })

  it("a ciphertext moved to another org or connection, tampered or foreign does not decrypt, and the error carries none of it", async () => {
    const c = await cipher({ SP_DATA_DIR: tempDir(), SP_ENCRYPTION_KEY: "k-one" })
    const sealed = c.encrypt("pw", OWNER)
    const flipped = `${sealed.slice(0, -2)}${sealed.at(-2) === "A" ? "B" : "A"}${sealed.at(-1)}`
    for (const [text, owner] of [
      [sealed, { ...OWNER, connectionId: "conn_2" }],
      [sealed, { ...OWNER, orgId: "org_b" }],
      [flipped, OWNER],
      ["v1:", OWNER],
      ["plain text", OWNER],
      [(await cipher({ SP_DATA_DIR: tempDir(), SP_ENCRYPTION_KEY: "k-two" })).encrypt("pw", OWNER), OWNER]
    ] as const) {
      const result = await decrypt(c, text, owner)
      expect(Either.isLeft(result), text).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left._tag).toBe("CredentialUndecryptable")
        expect(result.left.message).not.toContain(text.slice(3, 20) || "\u0000")
      }
    }
  })

  it("rotation: an old key only decrypts and flags the value stale; re-encrypted it is current", async () => {
    const salt = { SP_ENCRYPTION_SALT: "fixed-salt-for-the-fleet" }
    const old = await cipher({ SP_DATA_DIR: tempDir(), SP_ENCRYPTION_KEY: "old-key", ...salt })
    const sealed = old.encrypt("pw", OWNER)

    const rotated = await cipher({ SP_DATA_DIR: tempDir(), SP_ENCRYPTION_KEY: "new-key", SP_ENCRYPTION_KEY_OLD: "older,old-key", ...salt })
    const opened = await decrypt(rotated, sealed, OWNER)
    expect(opened).toEqual(Either.right({ plaintext: "pw", stale: true }))
    const resealed = rotated.encrypt("pw", OWNER)
    expect(await decrypt(rotated, resealed, OWNER)).toEqual(Either.right({ plaintext: "pw", stale: false }))

    const withoutOld = await cipher({ SP_DATA_DIR: tempDir(), SP_ENCRYPTION_KEY: "new-key", ...salt })
    expect(Either.isLeft(await decrypt(withoutOld, sealed, OWNER))).toBe(true)
    expect(await decrypt(withoutOld, resealed, OWNER)).toEqual(Either.right({ plaintext: "pw", stale: false }))
  })

  it("cloud refuses to start without a key or a shared salt, naming the variable", async () => {
    const cloud = { SP_DEPLOYMENT_MODE: "cloud", DATABASE_URL: "postgres://db.example/sluice", SP_DATA_DIR: tempDir() }
    const noKey = await cipherWith(cloud)
    expect(Either.isLeft(noKey) && String(noKey.left)).toContain("SP_ENCRYPTION_KEY")
    const noSalt = await cipherWith({ ...cloud, SP_ENCRYPTION_KEY: "k" })
    expect(Either.isLeft(noSalt) && String(noSalt.left)).toContain("SP_ENCRYPTION_SALT")
    expect(fs.readdirSync(cloud.SP_DATA_DIR)).toEqual([])
    const ok = await cipherWith({ ...cloud, SP_ENCRYPTION_KEY: "k", SP_ENCRYPTION_SALT: "s" })
    expect(Either.isRight(ok)).toBe(true)
  })
})
