import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { type Gateway, runCli, startGateway, tempDataDir } from "../support/Gateway"
import { request } from "../support/Http"

// runCli inherits this process's environment: make sure it points at the embedded store only.
for (const name of Object.keys(process.env)) {
  if (name.startsWith("SP_") || name === "DATABASE_URL" || name === "REDIS_URL") delete process.env[name]
}

const KEY = /^sp_[0-9a-f]{32}$/
const dirs: Array<string> = []
const dataDir = () => {
  const dir = tempDataDir()
  dirs.push(dir)
  return dir
}
const running: Array<Gateway> = []
const start = async (options: Parameters<typeof startGateway>[0]) => {
  const gateway = await startGateway(options)
  running.push(gateway)
  return gateway
}
const stopAll = async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()))
}
/** stderr without npm's own warnings. */
const stderrLines = (stderr: string) =>
  stderr.split("\n").filter((line) => line.trim().length > 0 && !line.startsWith("npm warn"))

afterEach(stopAll)
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

describe("sluice --help", () => {
  it("prints the commands on stdout and exits 0, with -h and help too, without opening a store", async () => {
    const dir = dataDir()
    for (const args of [["--help"], ["-h"], ["help"]]) {
      const help = await runCli(args, { SP_DATA_DIR: dir })
      expect(help.code, `${args}: ${help.stderr}`).toBe(0)
      expect(help.stdout).toContain("usage:")
      expect(help.stdout).toContain("sluice keys create")
      expect(help.stdout).toContain("npm start")
      expect(stderrLines(help.stderr)).toEqual([])
    }
    expect(fs.readdirSync(dir)).not.toContain("store.lock")
  })
})

describe("sluice keys create on the embedded store", () => {
  // Seven CLI runs and a gateway, each a cold process start: minutes when the suite shares two cores.
  it("prints only the raw key on stdout; the key works on a gateway on that data dir, and the CLI is locked out while it runs", { timeout: 180_000 }, async () => {
    const dir = dataDir()
    const created = await runCli(["keys", "create", "--name", "k1", "--scopes", "read,admin"], { SP_DATA_DIR: dir })
    expect(created.code, created.stderr).toBe(0)
    expect(created.stdout).toMatch(/^sp_[0-9a-f]{32}\n$/)
    const key = created.stdout.trim()
    expect(created.stderr).toContain("shown only once")
    expect(created.stderr).toContain(key.slice(0, 11))
    expect(created.stderr).not.toContain(key)

    // Bad input: exit 2, a message that says what is wrong, and nothing created.
    const noName = await runCli(["keys", "create", "--name", "", "--scopes", "read"], { SP_DATA_DIR: dir })
    expect(noName.code).toBe(2)
    expect(noName.stdout).toBe("")
    expect(noName.stderr).toMatch(/^sluice: .*name is required/m)
    expect(noName.stderr).toContain("usage:")
    const bogus = await runCli(["keys", "create", "--name", "k2", "--scopes", "bogus"], { SP_DATA_DIR: dir })
    expect(bogus.code).toBe(2)
    expect(bogus.stdout).toBe("")
    expect(bogus.stderr).toMatch(/^sluice: scopes\.0: unknown scope "bogus"; scopes are: read, query/m)
    expect(bogus.stderr).toContain("bogus")

    const gateway = await start({ dataDir: dir })
    const listed = await request(gateway.url, "/api/keys", { key })
    expect(listed.status).toBe(200)
    const names = listed.json.items.map((k: { name: string }) => k.name).sort()
    expect(names).toEqual(["k1", "local"])
    expect((await request(gateway.url, "/api/plan", { key })).status).toBe(200)

    const locked = await runCli(["keys", "create", "--name", "k3", "--scopes", "read"], { SP_DATA_DIR: dir })
    expect(locked.code).not.toBe(0)
    expect(locked.stdout).toBe("")
    expect(locked.stderr).toContain(`is in use by process ${gateway.process.pid}`)
    expect(stderrLines(locked.stderr)).toHaveLength(1)

    // The lock goes with the gateway: after a stop the CLI works on that data dir again.
    await stopAll()
    const after = await runCli(["keys", "create", "--name", "k3", "--scopes", "read"], { SP_DATA_DIR: dir })
    expect(after.code, after.stderr).toBe(0)
    expect(after.stdout.trim()).toMatch(KEY)
    const duplicate = await runCli(["keys", "create", "--name", "k3", "--scopes", "read"], { SP_DATA_DIR: dir })
    expect(duplicate.code).toBe(2)
    expect(duplicate.stdout).toBe("")
    expect(duplicate.stderr).toMatch(/^sluice: A key named "k3" already exists/m)
  })

  it("bootstrap without local access: /local-api-key is 404, no key is 401, and a CLI-made admin key works", async () => {
    const dir = dataDir()
    const created = await runCli(["keys", "create", "--name", "ops", "--scopes", "read,admin"], { SP_DATA_DIR: dir })
    expect(created.code, created.stderr).toBe(0)
    const key = created.stdout.trim()
    expect(key).toMatch(KEY)

    const gateway = await start({ dataDir: dir, env: { SP_LOCAL_ACCESS: "false" } })
    const local = await request(gateway.url, "/local-api-key")
    expect([local.status, local.json.code]).toEqual([404, "not_found"])
    expect(local.text).not.toMatch(/sp_[0-9a-f]{32}/)
    expect(fs.existsSync(path.join(dir, ".local_api_key"))).toBe(false)

    const anonymous = await request(gateway.url, "/api/keys")
    expect([anonymous.status, anonymous.json.code]).toEqual([401, "unauthenticated"])

    const listed = await request(gateway.url, "/api/keys", { key })
    expect(listed.status).toBe(200)
    expect(listed.json.items.map((k: { name: string }) => k.name)).toEqual(["ops"])
    // The key was committed with its audit row.
    const audit = await request(gateway.url, "/api/audit?event_type=cli", { key })
    expect(audit.json.items).toEqual([
      expect.objectContaining({ principal: "local", route: "sluice keys create", outcome: "success", details: expect.objectContaining({ name: "ops", created_key_id: listed.json.items[0].id }) })
    ])
    const made = await request(gateway.url, "/api/keys", { key, body: { name: "reader", scopes: ["read"] } })
    expect(made.status).toBe(201)
    expect((await request(gateway.url, "/api/plan", { key: made.json.key })).status).toBe(200)
  })
})
