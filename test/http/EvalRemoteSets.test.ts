import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LOCAL_ORG, OrgId } from "../../src/domain/Ids"
import { remoteCacheName } from "../../src/services/EvalSets"
import { tempDataDir } from "../support/Gateway"
import { git } from "../support/Git"
import { startGitRemote } from "../support/GitRemote"
import { request } from "../support/Http"
import { startCloudEvalStaff, startInProcess } from "../support/InProcess"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const EXAMPLE = path.resolve(import.meta.dirname, "../../docs/eval-set-example")
const TOKEN = `ghp_${randomBytes(16).toString("hex")}`

/** An eval set on a git remote (issue 31: "eval repository (a workspace project or a remote)"). */
describe("eval sets from a git remote", () => {
  let root: string
  let work: string
  let remote: Awaited<ReturnType<typeof startGitRemote>>
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let admin: string
  const dataDir = tempDataDir()

  /** Commits the example set (changed by `edit`) under evals/jaffle of the bare repository `name` and returns the commit. */
  const publish = async (name: string, edit: (set: string) => void = () => {}) => {
    const bare = path.join(root, `${name}.git`)
    const clone = path.join(work, name)
    if (!fs.existsSync(bare)) {
      expect((await git(["init", "-q", "--bare", bare], work)).code).toBe(0)
      expect((await git(["clone", "-q", bare, clone], work)).code).toBe(0)
    }
    const set = path.join(clone, "evals/jaffle")
    fs.rmSync(set, { recursive: true, force: true })
    fs.cpSync(EXAMPLE, set, { recursive: true })
    edit(set)
    await git(["add", "-A"], clone)
    expect((await git(["commit", "-q", "-m", "set"], clone)).code).toBe(0)
    const pushed = await git(["push", "-q", "origin", "HEAD:main"], clone)
    expect(pushed.code, pushed.stderr).toBe(0)
    return (await git(["rev-parse", "HEAD"], clone)).stdout.trim()
  }
  const useRemote = async (source: Record<string, unknown>, key = admin, url = gateway.url) => {
    const saved = await request(url, "/api/evals/config", { key, method: "PUT", body: { eval_set: { kind: "remote", path: "evals/jaffle", ref: null, ...source } } })
    expect(saved.status, saved.text).toBe(200)
    return request(url, "/api/evals/tasks", { key })
  }

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-remote-"))
    work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-remote-work-"))
    remote = await startGitRemote(root, TOKEN)
    gateway = await startInProcess({ SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000", SP_EVAL_REMOTE_MAX_MB: "2", SP_DATA_DIR: dataDir })
    admin = await gateway.keyWith(["read", "write", "admin"])
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await remote?.close()
    for (const dir of [root, work]) if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
  })

  it("reads the set at the remote's default branch, a branch or a commit; a commit it already holds is not fetched again", async () => {
    const first = await publish("sets")
    const answer = await useRemote({ url: `${remote.url}/sets.git` })
    expect(answer.status, answer.text).toBe(200)
    expect(answer.json.ref).toBe(`jaffle_orders@${first}`)
    expect(answer.json.source).toEqual({ kind: "remote", url: `${remote.url}/sets.git`, path: "evals/jaffle", ref: null, secret_name: null })
    expect(answer.json.manifest.tasks.map((t: { id: string }) => t.id)).toEqual(["revenue_2018", "top_customers", "orders_daily"])

    const second = await publish("sets", (set) => fs.appendFileSync(path.join(set, "eval.yaml"), "\n# changed\n"))
    expect((await useRemote({ url: `${remote.url}/sets.git`, ref: "main" })).json.ref).toBe(`jaffle_orders@${second}`)
    const pinned = await useRemote({ url: `${remote.url}/sets.git`, ref: first })
    expect(pinned.json.ref).toBe(`jaffle_orders@${first}`)
    const asked = remote.requests.length
    expect((await request(gateway.url, "/api/evals/tasks", { key: admin })).json.ref).toBe(`jaffle_orders@${first}`)
    expect(remote.requests.length).toBe(asked)
  })

  it("fetches a private remote with the organization secret it names, and says why it cannot without it, never showing the token", async () => {
    await publish("private")
    const url = `${remote.url}/private.git`
    const anonymous = await useRemote({ url })
    expect(anonymous.status).toBe(503)
    expect(anonymous.json).toEqual({ code: "unavailable", message: "The eval remote could not be fetched: the remote refused access (no token was sent)" })

    const unset = await useRemote({ url, secret_name: "git_token" })
    expect(unset.status).toBe(400)
    expect(unset.json.message).toBe("The eval remote's token, the organization secret git_token, is not set: PUT /api/org/secrets")

    const wrong = "not-the-token-" + randomBytes(4).toString("hex")
    expect((await request(gateway.url, "/api/org/secrets", { key: admin, method: "PUT", body: { secrets: { git_token: wrong } } })).status).toBe(200)
    const refused = await request(gateway.url, "/api/evals/tasks", { key: admin })
    expect(refused.status).toBe(503)
    expect(refused.json.message).toBe("The eval remote could not be fetched: the remote refused access with the token sent")
    expect(refused.text).not.toContain(wrong)

    expect((await request(gateway.url, "/api/org/secrets", { key: admin, method: "PUT", body: { secrets: { git_token: TOKEN } } })).status).toBe(200)
    const read = await request(gateway.url, "/api/evals/tasks", { key: admin })
    expect(read.status, read.text).toBe(200)
    expect(read.text).not.toContain(TOKEN)
    expect(remote.requests.filter((r) => r.path.startsWith("/private")).at(-1)!.authorization).toBe(`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString("base64")}`)
    const config = await request(gateway.url, "/api/evals/config", { key: admin })
    expect(config.text).not.toContain(TOKEN)
  })

  it("refuses a remote it does not fetch from, each with its own message, and changes nothing", async () => {
    const before = (await request(gateway.url, "/api/evals/config", { key: admin })).json
    const urls = [
      `http://git:${TOKEN}@127.0.0.1/sets.git`,
      "file:///etc/sets.git",
      "ssh://git@example.com/sets.git",
      "git://example.com/sets.git",
      "ext::sh -c id",
      "https://example.com/sets.git?token=1",
      "https://example.com/sets.git#main",
      "/srv/sets.git",
      "https://example.com",
      `https://example.com/${"a".repeat(500)}`,
      // A host curl would read as an instruction, not a name: "-host:port:…" removes its pin (attack 41 F1).
      "http://-rebind:8080/sets.git",
      "http://+rebind:8080/sets.git",
      "http://a_b.example.com/sets.git",
      // IPv6 literals: git's pin cannot carry them (attack 41 F4); a name with AAAA records can.
      "http://[::1]:8080/sets.git",
      "http://[::ffff:7f00:1]/sets.git"
    ]
    for (const url of urls) {
      const refused = await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { eval_set: { kind: "remote", url, path: "evals/jaffle", ref: null } } })
      expect(refused.status, url).toBe(400)
      expect(refused.json.message, url).toMatch(/url/)
      expect(refused.text).not.toContain(TOKEN)
    }
    const badSecret = await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { eval_set: { kind: "remote", url: `${remote.url}/sets.git`, path: ".", ref: null, secret_name: "Not A Name" } } })
    expect(badSecret.status).toBe(400)
    expect(badSecret.json.message).toMatch(/secret's name/)
    expect((await request(gateway.url, "/api/evals/config", { key: admin })).json).toEqual(before)
  })

  it("follows no redirect, and says what is missing: the ref, the folder", async () => {
    await publish("sets")
    const moved = await useRemote({ url: `${remote.url}/moved/sets.git` })
    expect(moved.status).toBe(503)
    expect(moved.json.message).toMatch(/^The eval remote could not be fetched: /)
    const followed = remote.requests.findIndex((r) => r.path.startsWith("/moved/"))
    expect(remote.requests.slice(followed).every((r) => r.path.startsWith("/moved/"))).toBe(true)

    const noRef = await useRemote({ url: `${remote.url}/sets.git`, ref: "nope" })
    expect(noRef.status).toBe(503)
    expect(noRef.json.message).toMatch(/couldn't find remote ref nope/)
    const noFolder = await useRemote({ url: `${remote.url}/sets.git`, path: "evals/elsewhere" })
    expect(noFolder.status).toBe(400)
    expect(noFolder.json.message).toBe("The eval remote has no folder evals/elsewhere at its default branch")
    const nowhere = await useRemote({ url: "http://127.0.0.1:1/sets.git" })
    expect(nowhere.status).toBe(503)
    expect(nowhere.json.message).toMatch(/^The eval remote could not be fetched: .*(Connection refused|Failed to connect)/)
  })

  it("keeps one cache a repository however its URL is spelled, at most 3 an organization, each organization's its own (attack 41 F5, F6)", async () => {
    for (const name of ["r1", "r2", "r3", "r4"]) await publish(name)
    const spellings = [`${remote.url}/r1.git`, `${remote.url}/./r1.git`, `${remote.url}/x/../r1.git`, `${remote.url}/r1.git/`]
    for (const url of spellings) expect((await useRemote({ url })).status, url).toBe(200)
    expect(remoteCacheName(LOCAL_ORG, spellings[1]!)).toBe(remoteCacheName(LOCAL_ORG, spellings[0]!))
    for (const name of ["r2", "r3", "r4"]) expect((await useRemote({ url: `${remote.url}/${name}.git` })).status).toBe(200)
    const caches = path.join(dataDir, "repos", path.dirname(remoteCacheName(LOCAL_ORG, `${remote.url}/r1.git`)))
    expect(fs.readdirSync(caches).sort()).toEqual(["r2", "r3", "r4"].map((name) => `${path.basename(remoteCacheName(LOCAL_ORG, `${remote.url}/${name}.git`))}.git`).sort())
    // Organizations whose ids a lossy cleaning would make one keep caches of their own.
    expect(remoteCacheName(OrgId.make("acme.corp"), `${remote.url}/r1.git`)).not.toBe(remoteCacheName(OrgId.make("acme_corp"), `${remote.url}/r1.git`))
  })

  it("fetches one remote at a time for an organization (attack 41 F3)", async () => {
    const changed = (set: string) => fs.writeFileSync(path.join(set, "changed.txt"), randomBytes(8).toString("hex"))
    await publish("sets", changed)
    await publish("r1", changed)
    const save = (url: string) => request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { eval_set: { kind: "remote", url, path: "evals/jaffle", ref: null } } })
    expect((await save(`${remote.url}/slow/sets.git`)).status).toBe(200)
    const first = request(gateway.url, "/api/evals/tasks", { key: admin })
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await save(`${remote.url}/slow/r1.git`)).status).toBe(200)
    const second = request(gateway.url, "/api/evals/tasks", { key: admin })
    expect((await first).status).toBe(200)
    expect((await second).status).toBe(200)
    const asked = (repo: string) => remote.requests.filter((r) => r.path.startsWith(`/slow/${repo}`)).map((r) => r.atMs)
    expect(Math.min(...asked("r1"))).toBeGreaterThan(Math.max(...asked("sets")))
  })

  it("stops a fetch past SP_EVAL_REMOTE_MAX_MB and keeps nothing of it", async () => {
    await publish("big", (set) => fs.writeFileSync(path.join(set, "noise.bin"), randomBytes(6 * 1024 * 1024)))
    const big = await useRemote({ url: `${remote.url}/big.git` })
    expect(big.status).toBe(503)
    expect(big.json.message).toBe("The eval remote could not be fetched: it is larger than 2 MiB")
    expect(fs.existsSync(path.join(dataDir, "repos", `${remoteCacheName(LOCAL_ORG, `${remote.url}/big.git`)}.git`))).toBe(false)
  })
})

describe.skipIf(!(await postgresAvailable()))("eval sets from a git remote in cloud mode", () => {
  it("refuses a remote on the gateway's own host: it is reached as a connection would be", async () => {
    const store = await createTestDatabase()
    const { gateway, admin } = await startCloudEvalStaff(store.url)
    try {
      // The gateway host's own addresses serve what its loopback does; Alibaba's metadata service is one more (attack 41 F2).
      const own = Object.values(os.networkInterfaces()).flat().filter((i) => i !== undefined && !i.internal && i.family === "IPv4").map((i) => `http://${i!.address}:8080/sets.git`)
      for (const url of ["http://127.0.0.1:8080/sets.git", "http://169.254.169.254/sets.git", "http://localhost/sets.git", "http://100.100.100.200/sets.git", ...own]) {
        const saved = await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { eval_set: { kind: "remote", url, path: ".", ref: null } } })
        expect(saved.status, saved.text).toBe(200)
        const refused = await request(gateway.url, "/api/evals/tasks", { key: admin })
        expect(refused.status, url).toBe(400)
        expect(refused.json.message, url).toMatch(/^The eval remote cannot be reached: This gateway does not connect to .*: loopback, link-local and cloud metadata addresses, and the gateway host.s own, are off limits/)
      }
    } finally {
      await gateway.stop()
      await store.drop()
    }
  })
})
