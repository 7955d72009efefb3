import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The trimmed contents of a secret file, made with `make()` (mode 600, directory 700) when it is
 * missing or fails `isValid`. Creation links a temp file into place, so concurrent starters agree.
 */
export const readOrCreateSecretFile = (file: string, make: () => string, isValid = (text: string) => text.length > 0) => {
  const existing = fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim() : null
  if (existing !== null && isValid(existing)) return existing
  const temp = writeBeside(file, make())
  try {
    if (existing !== null) fs.renameSync(temp, file)
    else fs.linkSync(temp, file)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
  } finally {
    fs.rmSync(temp, { force: true })
  }
  return fs.readFileSync(file, "utf8").trim()
}

/** Puts `value` in the secret file (mode 600), replacing what it held in one rename; false when it held that already. */
export const replaceSecretFile = (file: string, value: string) => {
  if (fs.existsSync(file) && fs.readFileSync(file, "utf8").trim() === value) return false
  fs.renameSync(writeBeside(file, value), file)
  return true
}

/** `value` in a new private file next to `file` (directory 700, file 600), to be moved into place; its path. */
const writeBeside = (file: string, value: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`
  fs.writeFileSync(temp, value, { mode: 0o600 })
  return temp
}
