import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { buildServer, CLI_ENTRY, REPO_ROOT } from "./Build"
import { initialisedStoreDir, MIGRATED_STORE } from "./template"

/** Builds the bundles, then one embedded store migrated by this build's CLI, which every test's data dir copies. */
export default async function setup() {
  buildServer()
  const initialised = initialisedStoreDir()
  if (!fs.existsSync(`${initialised}/PG_VERSION`)) {
    const building = `${initialised}.${process.pid}`
    const db = await PGlite.create({ dataDir: building })
    await db.close()
    fs.rmSync(initialised, { recursive: true, force: true })
    fs.renameSync(building, initialised)
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-migrated-"))
  fs.cpSync(initialised, path.join(dataDir, "pgdata"), { recursive: true })
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SP_") && k !== "DATABASE_URL"))
  execFileSync(process.execPath, [CLI_ENTRY, "migrate"], { cwd: REPO_ROOT, env: { ...env, SP_DATA_DIR: dataDir }, stdio: "ignore" })
  process.env[MIGRATED_STORE] = path.join(dataDir, "pgdata")
  return () => fs.rmSync(dataDir, { recursive: true, force: true })
}
