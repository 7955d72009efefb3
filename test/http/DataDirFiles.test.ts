import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { freePort, type Gateway, GATEWAY_ENTRY, localKey, REPO_ROOT, startGateway, tempDataDir } from "../support/Gateway"
import { request } from "../support/Http"

const made: Array<string> = []
const tempDir = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  made.push(dir)
  return dir
}

/** Every file and directory under `dir` (symlinks not followed) with its permission bits. */
const modes = (dir: string): Array<[string, number]> =>
  fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).map((entry) => [entry, fs.lstatSync(path.join(dir, entry)).mode & 0o777])

/** Runs the gateway until it exits (it must refuse to start) and returns its exit code and stderr. */
const refusedStart = async (env: Record<string, string>) => {
  const port = await freePort()
  return new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SP_") && k !== "DATABASE_URL"))
    const child = spawn(process.execPath, [GATEWAY_ENTRY], {
      cwd: REPO_ROOT,
      env: { ...inherited, SP_PORT: String(port), SP_WEB_PORT: "0", SP_NOTEBOOK_PORT: "0", ...env },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr.on("data", (d) => (stderr += d))
    child.on("close", (code) => resolve({ code, stderr }))
  })
}

describe("the data dir and local database files", () => {
  const gateways: Array<Gateway> = []
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()))
    for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
  })

  it("an existing data dir's store and key files are made private (dirs 0700, files 0600) at start", async () => {
    const dir = tempDataDir()
    made.push(dir)
    // An older install (or a copy made under umask 000) left everything open.
    for (const [entry] of modes(dir)) {
      const full = path.join(dir, entry)
      fs.chmodSync(full, fs.statSync(full).isDirectory() ? 0o777 : 0o666)
    }
    fs.chmodSync(dir, 0o700)
    const gateway = await startGateway({ dataDir: dir })
    gateways.push(gateway)
    await localKey(gateway)
    const open = modes(dir).filter(([, mode]) => (mode & 0o077) !== 0)
    expect(open).toEqual([])
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700)
    expect(fs.statSync(path.join(dir, ".local_api_key")).mode & 0o777).toBe(0o600)
    expect(modes(dir).some(([entry]) => entry.startsWith("pgdata"))).toBe(true)
  })

  it("refuses to start with one clear line when the data dir is writable by group or others", async () => {
    for (const mode of [0o777, 0o770]) {
      const dir = tempDir("sluice-open-")
      fs.chmodSync(dir, mode)
      const { code, stderr } = await refusedStart({ SP_DATA_DIR: dir })
      expect(code, stderr).not.toBe(0)
      const lines = stderr.trim().split("\n")
      expect(lines, stderr).toHaveLength(1)
      expect(lines[0]).toMatch(/^sluice: invalid configuration: SP_DATA_DIR: .*writable by group or others.*chmod 700/)
      // Nothing was written into it.
      expect(fs.readdirSync(dir)).toEqual([])
    }
  })

  it("a sqlite/duckdb path through a symlink out of the allowed directories is refused; a real file inside is accepted", async () => {
    const allowed = tempDir("sluice-allowed-")
    const outside = tempDir("sluice-outside-")
    fs.writeFileSync(path.join(outside, "secret.db"), "")
    fs.symlinkSync(path.join(outside, "secret.db"), path.join(allowed, "escape.db"))
    fs.symlinkSync(outside, path.join(allowed, "linked"))
    fs.writeFileSync(path.join(allowed, "real.db"), "")
    const gateway = await startGateway({ env: { SP_LOCAL_DB_DIRS: allowed } })
    gateways.push(gateway)
    const key = await localKey(gateway)
    const create = (name: string, db_type: string, database: string) =>
      request(gateway.url, "/api/connections", { key, body: { name, db_type, database } })

    for (const [name, db_type, database] of [
      ["escape", "sqlite", path.join(allowed, "escape.db")],
      ["linked-existing", "duckdb", path.join(allowed, "linked", "secret.db")],
      // A file not there yet: its parent is resolved, and the parent is a link outside.
      ["linked-missing", "sqlite", path.join(allowed, "linked", "new.db")]
    ] as const) {
      const res = await create(name, db_type, database)
      expect(res.status, `${name}: ${res.text}`).toBe(400)
      expect(res.json.message).toMatch(/inside the gateway's data directory or a directory listed in SP_LOCAL_DB_DIRS/)
    }
    const listed = await request(gateway.url, "/api/connections", { key })
    expect(listed.json.items.map((c: { name: string }) => c.name)).toEqual([])

    const real = await create("real", "sqlite", path.join(allowed, "real.db"))
    expect(real.status, real.text).toBe(201)
    const fresh = await create("fresh", "sqlite", path.join(allowed, "sub-missing.db"))
    expect(fresh.status, fresh.text).toBe(201)
  })
})
