import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { randomBytes } from "node:crypto"
import { gzipSync } from "node:zlib"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { OrgId, UserId } from "../../src/domain/Ids"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { ApiKeys } from "../../src/services/ApiKeys"
import { git } from "../support/Git"
import { request, type RequestOptions } from "../support/Http"
import { localOperator, startInProcess } from "../support/InProcess"

const OTHER_ORG = OrgId.make("org_git_other")


describe("workspace projects over git smart HTTP (issue 30)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let writer: string
  let reader: string
  let stranger: string
  let work: string

  beforeAll(async () => {
    gateway = await startInProcess({ SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000", SP_RATE_LIMIT_GENERAL_RPM: "100000" })
    writer = await gateway.keyWith(["read", "write", "admin"])
    reader = await gateway.keyWith(["read"])
    // An admin of another organization, with every scope.
    stranger = await gateway.runtime.runPromise(
      Effect.gen(function* () {
        yield* (yield* OrgsRepo).ensureMember({ orgId: OTHER_ORG, orgName: "other", userId: UserId.make("user_other"), role: "admin" })
        return (yield* (yield* ApiKeys).create({ ...localOperator, orgId: OTHER_ORG, userId: UserId.make("user_other") }, { name: "other", scopes: ["read", "write", "admin"] })).key
      }).pipe(Effect.provide(OrgsRepo.Default))
    )
    work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-git-"))
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true })
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: writer, ...options })
  const remote = (id: string, key: string) => `${gateway.url.replace("http://", `http://git:${key}@`)}/git/${id}.git`
  const folder = (name: string) => {
    const dir = path.join(work, name)
    fs.mkdirSync(dir, { recursive: true })
    return dir
  }
  const auditOf = async (eventType: string) => (await api(`/api/audit?event_type=${eventType}&limit=20`)).json.items as ReadonlyArray<Record<string, any>>

  it("create, list, get, change and delete a project; its clone URL; bad input and another org refused", async () => {
    const created = await api("/api/workspace-projects", { body: { name: "analytics", description: "dbt models", protected_branches: ["release"], tags: ["dbt"] } })
    expect(created.status, created.text).toBe(201)
    expect(created.json).toMatchObject({ name: "analytics", display_name: "analytics", source: "managed", default_branch: "main", protected_branches: ["release"], tags: ["dbt"], status: "active" })
    const id = created.json.id
    expect(id).toMatch(/^wsp_[0-9a-f]{32}$/)
    expect((await api("/api/workspace-projects", { body: { name: "analytics" } })).status).toBe(409)
    for (const body of [{ name: "no spaces" }, { name: "x", default_branch: "../main" }, { name: "x", protected_branches: ["-f"] }, { name: "x", extra: 1 }, { name: "x", connection_name: "missing" }]) {
      const refused = await api("/api/workspace-projects", { body })
      expect([refused.status, refused.json.code], JSON.stringify(body)).toEqual([body.connection_name === undefined ? 400 : 404, body.connection_name === undefined ? "invalid_request" : "not_found"])
    }
    expect((await request(gateway.url, "/api/workspace-projects", { key: reader, body: { name: "y" } })).status).toBe(403)
    expect((await request(gateway.url, "/api/workspace-projects", { key: reader })).json.items.map((p: { id: string }) => p.id)).toEqual([id])
    const clone = await request(gateway.url, `/api/workspace-projects/${id}/clone-url`, { key: reader })
    expect(clone.json).toMatchObject({ clone_url: `${gateway.url}/git/${id}.git`, default_branch: "main" })
    expect(clone.text).not.toContain(reader)

    // Another organization sees none of it.
    for (const [method, route] of [
      ["GET", `/api/workspace-projects/${id}`],
      ["GET", `/api/workspace-projects/${id}/clone-url`],
      ["PUT", `/api/workspace-projects/${id}`],
      ["DELETE", `/api/workspace-projects/${id}`]
    ] as const) {
      const refused = await request(gateway.url, route, { key: stranger, method, ...(method === "PUT" ? { body: { description: "mine" } } : {}) })
      expect([method, route, refused.status]).toEqual([method, route, 404])
    }
    expect((await request(gateway.url, "/api/workspace-projects", { key: stranger })).json.items).toEqual([])

    const changed = await api(`/api/workspace-projects/${id}`, { method: "PUT", body: { display_name: "Analytics", tags: [] } })
    expect(changed.json).toMatchObject({ display_name: "Analytics", tags: [], protected_branches: ["release"], description: "dbt models" })
    expect((await api(`/api/workspace-projects/${id}`, { method: "DELETE" })).json).toEqual({ id, deleted: true })
    expect((await api(`/api/workspace-projects/${id}`)).status).toBe(404)
  })

  it("clone, commit, push and pull with the real git client; reads need read, pushes write; one audit row per push with its refs", async () => {
    const id = (await api("/api/workspace-projects", { body: { name: "models" } })).json.id
    const alice = folder("alice")
    const cloned = await git(["clone", remote(id, writer), "repo"], alice)
    expect(cloned.code, cloned.stderr).toBe(0)
    const repo = path.join(alice, "repo")
    fs.mkdirSync(path.join(repo, "models"))
    fs.writeFileSync(path.join(repo, "models", "orders.sql"), "select * from {{ ref('stg_orders') }}\n")
    expect((await git(["add", "."], repo)).code).toBe(0)
    expect((await git(["commit", "-m", "orders"], repo)).code).toBe(0)
    const pushed = await git(["push", "origin", "main"], repo)
    expect(pushed.code, pushed.stderr).toBe(0)
    const head = (await git(["rev-parse", "HEAD"], repo)).stdout.trim()

    // A reader clones and pulls, and cannot push.
    const bob = folder("bob")
    expect((await git(["clone", remote(id, reader), "repo"], bob)).code).toBe(0)
    expect(fs.readFileSync(path.join(bob, "repo", "models", "orders.sql"), "utf8")).toContain("stg_orders")
    fs.writeFileSync(path.join(repo, "models", "customers.sql"), "select 1\n")
    await git(["add", "."], repo)
    await git(["commit", "-m", "customers"], repo)
    expect((await git(["push"], repo)).code).toBe(0)
    const pulled = await git(["pull", "--ff-only"], path.join(bob, "repo"))
    expect(pulled.code, pulled.stderr).toBe(0)
    expect(fs.existsSync(path.join(bob, "repo", "models", "customers.sql"))).toBe(true)
    fs.writeFileSync(path.join(bob, "repo", "x.sql"), "select 2\n")
    await git(["add", "."], path.join(bob, "repo"))
    await git(["commit", "-m", "x"], path.join(bob, "repo"))
    const refused = await git(["push"], path.join(bob, "repo"))
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("403")

    const pushes = await auditOf("git_push")
    const first = pushes.find((row) => row.details?.refs?.[0]?.new === head)
    expect(first).toMatchObject({ outcome: "success", status: 200, details: { project_id: id, service: "git-receive-pack", refs: [{ ref: "refs/heads/main", old: "0".repeat(40), new: head, result: "updated" }] } })
    expect(pushes.filter((row) => row.details?.project_id === id && row.outcome === "success")).toHaveLength(2)
    // The reader's push stops at its ref discovery.
    expect((await auditOf("git_refs")).some((row) => row.outcome === "refused" && row.status === 403 && row.details?.service === "git-receive-pack")).toBe(true)
    expect((await auditOf("git_fetch")).some((row) => row.details?.project_id === id && row.outcome === "success")).toBe(true)
    // No key in any row.
    expect(JSON.stringify(await auditOf("git_refs"))).not.toContain(writer)
  })

  it("refuses a push to a protected branch on a remote: line, a wrong key, another org's project, and an archived project's pushes", async () => {
    const id = (await api("/api/workspace-projects", { body: { name: "guarded", protected_branches: ["main"] } })).json.id
    const dir = folder("guarded")
    expect((await git(["init", "repo"], dir)).code).toBe(0)
    const repo = path.join(dir, "repo")
    fs.writeFileSync(path.join(repo, "README.md"), "guarded\n")
    await git(["add", "."], repo)
    await git(["commit", "-m", "first"], repo)
    const refused = await git(["push", remote(id, writer), "main"], repo)
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toMatch(/remote: Sluice: main is a protected branch of this project/)
    expect(refused.stderr).toContain("[remote rejected]")
    const row = (await auditOf("git_push")).find((r) => r.details?.project_id === id)
    expect(row).toMatchObject({ outcome: "refused", block_reason: "protected_branch", details: { refs: [{ ref: "refs/heads/main", result: "refused" }] } })
    const feature = await git(["push", remote(id, writer), "main:feature"], repo)
    expect(feature.code, feature.stderr).toBe(0)
    expect((await git(["ls-remote", remote(id, reader)], repo)).stdout).toMatch(/refs\/heads\/feature/)
    expect((await git(["ls-remote", remote(id, reader)], repo)).stdout).not.toMatch(/refs\/heads\/main/)

    // The write key that pushes cannot lift the protection (attack 30, F5); an admin can.
    const lifted = await api(`/api/workspace-projects/${id}`, { method: "PUT", key: (await gateway.keyWith(["read", "write"])), body: { protected_branches: [] } })
    expect([lifted.status, lifted.json.code]).toEqual([403, "insufficient_scope"])
    expect((await api(`/api/workspace-projects/${id}`)).json.protected_branches).toEqual(["main"])
    // Nor go around it: another default branch, un-archiving, deleting the project with its protected history (round 2, N6).
    const writeOnly = await gateway.keyWith(["read", "write"])
    for (const [method, body] of [["PUT", { default_branch: "feature" }], ["PUT", { status: "archived" }], ["DELETE", undefined]] as const) {
      const refused = await api(`/api/workspace-projects/${id}`, { method, key: writeOnly, ...(body === undefined ? {} : { body }) })
      expect([method, refused.status, refused.json.code]).toEqual([method, 403, "insufficient_scope"])
    }

    const wrongKey = await git(["ls-remote", remote(id, `sp_${"0".repeat(32)}`)], repo)
    expect(wrongKey.code).not.toBe(0)
    expect(wrongKey.stderr).toMatch(/Authentication failed/)
    const noKey = await git(["ls-remote", `${gateway.url}/git/${id}.git`], repo)
    expect(noKey.code).not.toBe(0)
    const otherOrg = await git(["ls-remote", remote(id, stranger)], repo)
    expect(otherOrg.code).not.toBe(0)
    expect(otherOrg.stderr).toMatch(/not found/)
    expect((await git(["push", remote(id, stranger), "main:other"], repo)).code).not.toBe(0)

    expect((await api(`/api/workspace-projects/${id}`, { method: "PUT", body: { status: "archived" } })).status).toBe(200)
    const archived = await git(["push", remote(id, writer), "main:late"], repo)
    expect(archived.code).not.toBe(0)
    expect(archived.stderr).toContain("403")
    expect((await git(["ls-remote", remote(id, reader)], repo)).code).toBe(0)
  })

  it("speaks protocol v2 and takes gzipped requests; serves smart HTTP only", async () => {
    const id = (await api("/api/workspace-projects", { body: { name: "v2" } })).json.id
    const dir = folder("v2")
    await git(["init", "repo"], dir)
    const repo = path.join(dir, "repo")
    fs.writeFileSync(path.join(repo, "a.txt"), "a\n")
    await git(["add", "."], repo)
    await git(["commit", "-m", "a"], repo)
    expect((await git(["push", remote(id, writer), "main"], repo)).code).toBe(0)
    const listed = await git(["-c", "protocol.version=2", "ls-remote", remote(id, reader)], repo, { GIT_TRACE_PACKET: "1" })
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stderr).toMatch(/git< version 2/)
    const v2clone = await git(["-c", "protocol.version=2", "clone", remote(id, reader), "copy"], dir)
    expect(v2clone.code, v2clone.stderr).toBe(0)

    const auth = { authorization: `Basic ${Buffer.from(`git:${reader}`).toString("base64")}` }
    const lsRefs = await fetch(`${gateway.url}/git/${id}.git/git-upload-pack`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/x-git-upload-pack-request", "content-encoding": "gzip", "git-protocol": "version=2" },
      body: gzipSync(Buffer.from("0014command=ls-refs\n0000"))
    })
    expect(lsRefs.status).toBe(200)
    expect(await lsRefs.text()).toContain("refs/heads/main")
    const corrupt = await fetch(`${gateway.url}/git/${id}.git/git-upload-pack`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/x-git-upload-pack-request", "content-encoding": "gzip", "git-protocol": "version=2" },
      body: Buffer.from("not gzip at all, not at all")
    })
    expect([corrupt.status, ((await corrupt.json()) as { code: string }).code]).toEqual([400, "invalid_request"])

    for (const [method, route, headers, status] of [
      ["GET", `/git/${id}.git/HEAD`, {}, 404],
      ["GET", `/git/${id}.git/config`, {}, 404],
      ["GET", `/git/${id}.git/objects/info/packs`, {}, 404],
      ["GET", `/git/${id}.git/info/refs`, {}, 404],
      ["GET", `/git/../${id}.git/info/refs?service=git-upload-pack`, {}, 404],
      ["POST", `/git/${id}.git/git-upload-pack`, { "content-type": "text/plain" }, 415]
    ] as const) {
      const answer = await fetch(`${gateway.url}${route}`, { method, headers: { ...auth, ...headers }, ...(method === "POST" ? { body: "0000" } : {}) })
      expect([route, answer.status]).toEqual([route, status])
      expect(((await answer.json()) as { code: string }).code).toBeTypeOf("string")
    }
    const challenge = await fetch(`${gateway.url}/git/${id}.git/info/refs?service=git-upload-pack`)
    expect(challenge.status).toBe(401)
    expect(challenge.headers.get("www-authenticate")).toMatch(/^Basic realm=/)
  })
})

describe("a push past SP_GIT_PUSH_MAX_MB (issue 30)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let work: string
  beforeAll(async () => {
    gateway = await startInProcess({ SP_GIT_PUSH_MAX_MB: "1" })
    work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-git-cap-"))
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true })
  })

  it("is cut off as it streams, changes nothing and is audited as too large", async () => {
    const key = await gateway.keyWith(["read", "write"])
    const id = (await request(gateway.url, "/api/workspace-projects", { key, body: { name: "big" } })).json.id
    const url = `${gateway.url.replace("http://", `http://git:${key}@`)}/git/${id}.git`
    await git(["init", "repo"], work)
    const repo = path.join(work, "repo")
    // Random bytes do not compress: a pack of about 3 MB, sent chunked (past git's 1 MiB post buffer), so no length announces it.
    fs.writeFileSync(path.join(repo, "blob.bin"), randomBytes(3 * 1024 * 1024))
    await git(["add", "."], repo)
    await git(["commit", "-m", "big"], repo)
    const pushed = await git(["push", url, "main"], repo)
    expect(pushed.code).not.toBe(0)
    expect(pushed.stderr).toMatch(/413/)
    expect((await git(["ls-remote", url], repo)).stdout).toBe("")
    const rows = (await request(gateway.url, "/api/audit?event_type=git_push", { key })).json.items
    expect(rows[0]).toMatchObject({ status: 413, outcome: "error" })
    fs.writeFileSync(path.join(repo, "blob.bin"), "small\n")
    await git(["commit", "-am", "small", "--amend"], repo)
    const small = await git(["push", url, "main"], repo)
    expect(small.code, small.stderr).toBe(0)
  })
})
