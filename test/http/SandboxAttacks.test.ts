import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Eventually"
import { request, type RequestOptions } from "../support/Http"
import { startInProcess } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable()) || !fs.existsSync("/usr/bin/bwrap")

/** The attack on sandboxes of 2026-11-28 (issue 29): each finding as it was reproduced, now refused. */
describe("sandboxes under attack (issue 29)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let database: TestDatabase
  let owner: string
  let executeOnly: string
  let sibling: string
  let dataDir: string

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table t (id int, email text); insert into t select g, 'user' || g || '@example.org' from generate_series(1, 10) g")
    dataDir = fs.mkdtempSync("/tmp/sluice-attack-")
    fs.chmodSync(dataDir, 0o700)
    gateway = await startInProcess({
      SP_DATA_DIR: dataDir,
      SP_NOTEBOOK_IDLE_SNAPSHOT_SECONDS: "2",
      SP_SANDBOX_DISK_MB: "64",
      SP_PER_KEY_RPM: "100000",
      SP_RATE_LIMIT_EXPENSIVE_RPM: "100000",
      SP_PER_ORG_RPM: "100000"
    })
    const admin = await gateway.keyWith(["read", "query", "write", "execute", "admin"])
    owner = await gateway.keyWith(["read", "query", "execute"])
    executeOnly = await gateway.keyWith(["execute"])
    sibling = await gateway.keyWith(["read", "execute"])
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: owner, ...options })
  const create = async (body: Record<string, unknown> = {}) => (await api("/api/sandboxes", { body })).json.id as string
  const execute = async (id: string, code: string, key = owner) => (await api(`/api/sandboxes/${id}/execute`, { key, body: { code } })).json

  it.skipIf(skip)("F1: bytes the code writes on the runner's answer pipe end its sandbox at once, and the gateway stays fast", async () => {
    const id = await create()
    const code = "import os, struct, time\nos.write(4, struct.pack('>I', 60 * 1024 * 1024))\nfor i in range(20): os.write(4, b'x' * (1024 * 1024))\nwhile True:\n  os.write(4, b'x'); time.sleep(0.001)"
    const started = performance.now()
    const result = await execute(id, code)
    expect(result.success).toBe(false)
    expect(result.error).toMatch(/malformed|unasked/)
    expect(performance.now() - started).toBeLessThan(5_000)
    const health = performance.now()
    expect((await request(gateway.url, "/health")).status).toBe(200)
    expect(performance.now() - health).toBeLessThan(500)
  }, 30_000)

  it.skipIf(skip)("F2: the data socket holds a few connections per sandbox, each for a few seconds until its request is whole", async () => {
    const id = await create({ connection_name: "pg" })
    const code = `import socket, struct, time
held = []
for i in range(200):
  s = socket.socket(socket.AF_UNIX)
  s.connect('/run/sluice/gateway.sock')
  try:
    s.sendall(struct.pack('>I', 1024 * 1024) + b'x' * (1024 * 1024 - 1))
  except OSError:
    pass
  held.append(s)
time.sleep(6)
open_ = 0
for s in held:
  s.setblocking(False)
  try:
    open_ += 1 if s.recv(1) == b'' and False else 0
  except BlockingIOError:
    open_ += 1
  except OSError:
    pass
print(open_)`
    const result = await execute(id, code)
    expect(result.success, result.error).toBe(true)
    // None still held after the read deadline; at most a few were ever read.
    expect(Number(result.stdout.trim())).toBe(0)
    const after = await execute(id, "import sluice\nprint(sluice.query('select count(*) from t').rows)")
    expect(after.stdout).toBe("[['10']]\n")
  }, 60_000)

  it.skipIf(skip)("F3: sparse files count at their size against the disk quota; an errored sandbox leaves no snapshot behind", async () => {
    const id = await create()
    const result = await execute(id, "import time\nfor i in range(8):\n  open(f'sparse{i}', 'wb').truncate(255 * 1024 * 1024)\ntime.sleep(2)")
    const after = result.success ? await execute(id, "print(1)") : result
    expect(after).toMatchObject({ success: false, error: expect.stringMatching(/disk quota/) })
    const storage = path.join(dataDir, "sandboxes")
    const stored = fs.existsSync(storage) ? fs.readdirSync(storage, { recursive: true }).map(String) : []
    expect(stored.filter((entry) => entry.includes(id))).toEqual([])
  }, 30_000)

  it.skipIf(skip)("F4: a sandbox deleted while its snapshot runs stays deleted", async () => {
    const id = await create()
    await execute(id, "import time\nclass Slow:\n  def __reduce__(self):\n    time.sleep(4)\n    return (int, (7,))\nslow = Slow()\nmarker = 'alive'")
    // The snapshot starts 2 s after the execute and pickles for 4 s: delete in the middle of it.
    await new Promise((resolve) => setTimeout(resolve, 3_500))
    expect((await api(`/api/sandboxes/${id}`, { method: "DELETE" })).json).toMatchObject({ deleted: true, status: "stopped" })
    await new Promise((resolve) => setTimeout(resolve, 5_000))
    expect((await api(`/api/sandboxes/${id}`)).json.status).toBe("stopped")
    const again = await api(`/api/sandboxes/${id}/execute`, { body: { code: "print(marker)" } })
    expect(again.status).toBe(409)
  }, 30_000)

  it.skipIf(skip)("F5: a sandbox is its creating key's alone: another key of the same user cannot run code in it (or plant code for its next caller), and its own code cannot query without the query scope", async () => {
    const id = await create({ connection_name: "pg" })
    for (const [method, route, body] of [
      ["POST", `/api/sandboxes/${id}/execute`, { code: "print(1)" }],
      ["GET", `/api/sandboxes/${id}`, undefined],
      ["DELETE", `/api/sandboxes/${id}`, undefined]
    ] as const) {
      const refused = await api(route, { key: sibling, method, ...(body === undefined ? {} : { body }) })
      expect([route, method, refused.status, refused.json.code]).toEqual([route, method, 404, "not_found"])
    }
    expect((await api("/api/sandboxes", { key: sibling })).json.items.map((item: { id: string }) => item.id)).not.toContain(id)
    const own = (await api("/api/sandboxes", { key: executeOnly, body: { connection_name: "pg" } })).json.id as string
    const result = await execute(own, "import sluice\ntry:\n  sluice.query('select count(*) from t')\nexcept sluice.QueryError as e:\n  print(e.code)", executeOnly)
    expect(result.stdout).toBe("insufficient_scope\n")
  }, 30_000)

  it.skipIf(skip)("F6: a snapshot keeps no setuid or setgid bit of a file the code made", async () => {
    const id = await create()
    await execute(id, "import os\nopen('suid', 'w').write('#!/bin/sh\\nid\\n')\nos.chmod('suid', 0o6755)")
    await eventually(() => api(`/api/sandboxes/${id}`), (res) => res.json.status === "snapshotted", "the snapshot", 10_000)
    const stored = fs.readdirSync(path.join(dataDir, "sandboxes"), { recursive: true }).map(String).find((entry) => entry.includes(id) && entry.endsWith("suid"))
    expect(stored).toBeDefined()
    expect(fs.statSync(path.join(dataDir, "sandboxes", stored!)).mode & 0o7000).toBe(0)
  }, 30_000)

  it.skipIf(skip)("F7: a query refused at the sandbox's socket is audited", async () => {
    const id = await create({ connection_name: "pg" })
    await execute(id, "import sluice\ntry:\n  sluice.query('select 1', connection='elsewhere')\nexcept sluice.QueryError as e:\n  print(e.code)")
    const audit = (await api("/api/audit?limit=50")).json.items
    expect(audit.some((row: any) => row.outcome === "refused" && row.block_reason === "forbidden" && row.details?.parent?.sandbox_id === id)).toBe(true)
  }, 30_000)

  it.skipIf(skip)("F8: an answer the code forged on the runner's pipe ends its sandbox; the caller gets the sandbox's failure, not a 400", async () => {
    const id = await create()
    const forged = await api(`/api/sandboxes/${id}/execute`, {
      body: { code: "import sys\nm = sys.modules['__main__']\nm.OPERATIONS['execute'] = lambda request: {'success': True, 'stdout': {'x': 1}, 'stderr': '', 'error': None, 'execution_ms': 1, 'truncated': False}" }
    })
    expect(forged.status).toBe(200)
    const next = await api(`/api/sandboxes/${id}/execute`, { body: { code: "print(1)" } })
    expect(next.status).toBe(200)
    expect(next.json).toMatchObject({ success: false, error: expect.stringMatching(/malformed/) })
  }, 30_000)
})
