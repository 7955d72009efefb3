import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Duration, Effect, TestClock } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LOCAL_ORG, UserId } from "../../src/domain/Ids"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { ApiKeys } from "../../src/services/ApiKeys"
import { Sandboxes } from "../../src/services/Sandboxes"
import { eventually } from "../support/Eventually"
import { type Gateway, localKey, tempDataDir } from "../support/Gateway"
import { startIdentityProvider } from "../support/IdentityProvider"
import { request, type RequestOptions } from "../support/Http"
import { localOperator, startApp, startInProcess } from "../support/InProcess"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const inCi = process.env["CI"] === "true"
const sandboxesHere = fs.existsSync("/usr/bin/bwrap") && fs.existsSync("/usr/bin/python3")
if (!sandboxesHere && inCi) throw new Error("sandboxes need bubblewrap and python3: .ci/run installs them")
const skip = !(await postgresAvailable()) || !sandboxesHere
const STRANGER = UserId.make("someone-else")

describe("sandboxes (issue 29)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let database: TestDatabase
  let owner: string
  let reader: string
  let stranger: string

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query(`create table customers (id int primary key, name text, email text);
      insert into customers values (1, 'Ada', 'ada.lovelace@example.org'), (2, 'Bo', 'bo.derek@example.org')`)
    gateway = await startInProcess({ SP_NOTEBOOK_IDLE_SNAPSHOT_SECONDS: "1", SP_SANDBOX_DISK_MB: "64", SP_PER_KEY_RPM: "100000", SP_RATE_LIMIT_EXPENSIVE_RPM: "100000", SP_PER_ORG_RPM: "100000" })
    const admin = await gateway.keyWith(["read", "query", "write", "execute", "admin"])
    owner = await gateway.keyWith(["read", "query", "execute", "write"])
    reader = await gateway.keyWith(["read", "query"])
    // Another user of the same org, with every scope a sandbox needs.
    stranger = await gateway.runtime.runPromise(
      Effect.gen(function* () {
        yield* (yield* OrgsRepo).ensureMember({ orgId: LOCAL_ORG, orgName: "local", userId: STRANGER, role: "member" })
        return (yield* (yield* ApiKeys).create({ ...localOperator, userId: STRANGER, role: "member" }, { name: "stranger", scopes: ["read", "query", "execute"] })).key
      }).pipe(Effect.provide(OrgsRepo.Default))
    )
    const connection = { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    const rules = { rules: [{ table: "customers", column: "email", action: "redact" }] }
    expect((await request(gateway.url, "/api/connections/pg/pii", { key: admin, method: "PUT", body: rules })).status).toBe(200)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: owner, ...options })
  const execute = async (id: string, code: string, key = owner) => {
    const res = await api(`/api/sandboxes/${id}/execute`, { key, body: { code } })
    expect(res.status, res.text).toBe(200)
    return res.json
  }

  it.skipIf(skip)("create, run code whose state carries over, query through the gate (masked, audited, read-only), delete", async () => {
    const created = await api("/api/sandboxes", { body: { label: "analysis", connection_name: "pg", row_limit: 100 } })
    expect(created.status, created.text).toBe(201)
    expect(created.json).toMatchObject({ label: "analysis", status: "idle", connection_name: "pg", row_limit: 100, timeout_seconds: 300, executions: 0 })
    const id = created.json.id
    expect(id).toMatch(/^sbx_[0-9a-f]{32}$/)

    expect(await execute(id, "x = 40\nprint('hello')")).toEqual({ success: true, stdout: "hello\n", stderr: "", error: null, execution_ms: expect.any(Number), truncated: false })
    expect((await execute(id, "x += 2\nprint(x)")).stdout).toBe("42\n")
    const failed = await execute(id, "1/0")
    expect(failed).toMatchObject({ success: false, stdout: "" })
    expect(failed.error).toMatch(/ZeroDivisionError: division by zero$/)
    expect(failed.error).not.toContain("runner.py")

    const queried = await execute(id, "import sluice\nr = sluice.query('select id, name, email from customers order by id')\nprint(r.columns, r.rows, r.pii_masked)")
    expect(queried.success, queried.error).toBe(true)
    expect(queried.stdout).toContain("['id', 'name', 'email'] [[1, 'Ada', '[REDACTED]'], [2, 'Bo', '[REDACTED]']]")
    expect(queried.stdout).not.toContain("lovelace")
    const frame = await execute(id, "df = sluice.query_df('select name from customers order by id')\nprint(list(df['name']))")
    expect(frame.stdout).toBe("['Ada', 'Bo']\n")

    // Writes are refused by the gate, whatever the code tries; and the sandbox is bound to its connection.
    const write = await execute(id, "try:\n  sluice.query(\"update customers set name = 'x'\")\nexcept sluice.QueryError as e:\n  print(e.code)")
    expect(write.stdout).toBe("query_blocked\n")
    const other = await execute(id, "try:\n  sluice.query('select 1', connection='elsewhere')\nexcept sluice.QueryError as e:\n  print(e.code)")
    expect(other.stdout).toBe("forbidden\n")
    const forged = await execute(id, "import json, socket, struct\ns = socket.socket(socket.AF_UNIX)\ns.connect('/run/sluice/gateway.sock')\nm = json.dumps({'token': 'x' * 64, 'sql': 'select 1'}).encode()\ns.sendall(struct.pack('>I', len(m)) + m)\nprint(s.recv(4096)[4:].decode())")
    expect(JSON.parse(forged.stdout).error.code).toBe("unauthenticated")
    expect((await database.query("select name from customers where id = 1"))[0].name).toBe("Ada")

    const audit = (await api("/api/audit?limit=100")).json.items
    const executeRow = audit.find((row: any) => row.event_type === "sandbox_execute" && row.sql === null && JSON.stringify(row.details ?? {}).includes("execution_ms") && audit.some((child: any) => child.event_type === "query" && child.request_id === row.request_id))
    expect(executeRow).toBeDefined()
    const children = audit.filter((row: any) => row.event_type === "query" && row.request_id === executeRow.request_id)
    expect(children[0]).toMatchObject({ connection: "pg", details: { parent: { event_type: "sandbox_execute", sandbox_id: id } } })
    expect(audit.some((row: any) => row.event_type === "query" && row.outcome === "refused" && row.details?.parent?.sandbox_id === id)).toBe(true)
    expect(audit.some((row: any) => row.event_type === "sandbox_create" && row.details?.sandbox_id === id)).toBe(true)
    expect(JSON.stringify(audit)).not.toContain("lovelace")

    // A sandbox acts as its creator: no one else sees it, runs code in it or deletes it.
    for (const [method, route, body] of [
      ["GET", `/api/sandboxes/${id}`, undefined],
      ["POST", `/api/sandboxes/${id}/execute`, { code: "print(x)" }],
      ["DELETE", `/api/sandboxes/${id}`, undefined]
    ] as const) {
      const refused = await api(route, { key: stranger, method, ...(body === undefined ? {} : { body }) })
      expect([method, refused.status, refused.json.code]).toEqual([method, 404, "not_found"])
    }
    expect((await api("/api/sandboxes", { key: stranger })).json.items).toEqual([])
    // Another key of the same user is someone else too: a sandbox is its creating key's.
    expect((await api("/api/sandboxes", { key: reader })).json.items.map((s: any) => s.id)).not.toContain(id)
    const noExecute = await api(`/api/sandboxes/${id}/execute`, { key: reader, body: { code: "print(1)" } })
    expect([noExecute.status, noExecute.json.code]).toEqual([403, "insufficient_scope"])

    expect((await api(`/api/sandboxes/${id}`, { method: "DELETE" })).json).toEqual({ id, deleted: true, status: "stopped" })
    expect((await api(`/api/sandboxes/${id}`)).json).toMatchObject({ status: "stopped", executions: 8 })
    const afterDelete = await api(`/api/sandboxes/${id}/execute`, { body: { code: "print(x)" } })
    expect([afterDelete.status, afterDelete.json.code]).toEqual([409, "conflict"])
    expect(audit.length).toBeGreaterThan(0)
  }, 60_000)

  it.skipIf(skip)("bad input is refused with a clear error and changes nothing", async () => {
    for (const body of [{ row_limit: 0 }, { timeout_seconds: 99999 }, { label: "x".repeat(201) }, { unknown: 1 }]) {
      const refused = await api("/api/sandboxes", { body })
      expect([refused.status, refused.json.code]).toEqual([400, "invalid_request"])
    }
    const missing = await api("/api/sandboxes", { body: { connection_name: "nope" } })
    expect(missing.status).toBe(404)
    expect((await api("/api/sandboxes/sbx_missing/execute", { body: { code: "1" } })).status).toBe(404)
    expect((await api("/api/sandboxes/bad$id")).status).toBe(400)
  })

  it.skipIf(skip)("escapes fail cleanly: the host's ports, its files and secrets, outside the work dir, another sandbox, resource bombs", async () => {
    const a = (await api("/api/sandboxes", { body: { timeout_seconds: 5 } })).json.id
    const b = (await api("/api/sandboxes", { body: {} })).json.id
    const pidOfB = (await execute(b, "import os\nprint(os.getpid())")).stdout.trim()
    const attempts = {
      postgres: "import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('127.0.0.1', 5432))",
      gateway: `import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('127.0.0.1', ${new URL(gateway.url).port}))`,
      dataDir: "import os\nprint(os.listdir('/'))\nopen('/work/../.sluice/local.key').read()",
      environ: "v = open('/proc/1/environ').read()\nassert v == '', v\nraise PermissionError('empty')",
      shadow: "open('/etc/shadow').read()",
      outside: "open('/usr/lib/evil', 'w').write('x')",
      signal: `import os, signal\nos.kill(${pidOfB === "2" ? 99999 : Number(pidOfB)}, signal.SIGKILL)`
    }
    for (const [name, code] of Object.entries(attempts)) {
      const result = await execute(a, code)
      expect([name, result.success]).toEqual([name, false])
      expect(result.error).toMatch(/Error/)
    }
    // Whatever pid it named, the other sandbox lives on.
    expect((await execute(b, "print('alive')")).stdout).toBe("alive\n")

    const forkBomb = await execute(a, "import os\nkids = 0\ntry:\n  while True:\n    if os.fork() == 0:\n      import time; time.sleep(30); os._exit(0)\n    kids += 1\nexcept OSError as e:\n  print('refused after', kids)")
    expect(forkBomb.stdout).toMatch(/^refused after \d+\n$/)
    const output = await execute(a, "print('x' * (100 * 1024 * 1024))")
    expect(output.truncated).toBe(true)
    expect(output.stdout.length).toBe(1024 * 1024)
    const loop = await execute(a, "while True: pass")
    expect(loop).toMatchObject({ success: false, error: expect.stringMatching(/timeout/) })
    expect((await execute(a, "print('still here')")).stdout).toBe("still here\n")
    const memory = await execute(a, "b = bytearray(4 * 1024 * 1024 * 1024)")
    expect(memory.success).toBe(false)
    expect(memory.error).toMatch(/memory/)
    expect((await api(`/api/sandboxes/${a}`)).json).toMatchObject({ status: "error" })
    expect((await execute(b, "print('alive')")).stdout).toBe("alive\n")
    // Each file under the size limit, together over the work directory's disk quota: the sandbox is ended.
    const disk = await api(`/api/sandboxes/${b}/execute`, { body: { code: "import time\nfor i in range(8):\n  open(f'f{i}', 'wb').write(b'x' * 30 * 1024 * 1024)\n  time.sleep(0.4)" } })
    const after = disk.json.success ? await execute(b, "print(1)") : disk.json
    expect(after).toMatchObject({ success: false, error: expect.stringMatching(/its 64 MiB disk quota/) })
  }, 120_000)

  it.skipIf(skip)("hears what the code prints while it runs, in order, the whole of what it keeps even when its time runs out mid-print (issue 31's live logs)", async () => {
    const live = (code: string, timeoutSeconds?: number) =>
      gateway.runtime.runPromise(
        Effect.gen(function* () {
          const sandboxes = yield* Sandboxes
          const made = yield* sandboxes.create(localOperator, { label: "live" })
          const heard: Array<{ readonly stream: string; readonly text: string; readonly atMs: number }> = []
          const started = performance.now()
          const { result, killedForMemory } = yield* sandboxes.run(localOperator, made.id, { code, ...(timeoutSeconds === undefined ? {} : { timeout_seconds: timeoutSeconds }) }, undefined, (stream, text) =>
            heard.push({ stream, text, atMs: performance.now() - started })
          )
          const after = yield* Effect.either(sandboxes.execute(localOperator, made.id, { code: "print('after')" }))
          yield* sandboxes.remove(localOperator, made.id)
          return { heard, result, killedForMemory, tookMs: performance.now() - started, after }
        })
      )
    const paced = await live("import sys, time\nprint('one', flush=True)\nsys.stderr.write('two\\n')\ntime.sleep(1.5)\nprint('three')")
    expect(paced.result).toMatchObject({ success: true, stdout: "one\nthree\n", stderr: "two\n" })
    expect(paced.heard.map(({ stream, text }) => [stream, text])).toEqual([["stdout", "one\n"], ["stderr", "two\n"], ["stdout", "three\n"]])
    // Heard while the code slept, not when it ended.
    expect(paced.heard[0]!.atMs).toBeLessThan(paced.tookMs - 1000)
    // Printing as fast as it can until its timeout: every character it kept was heard once, in order, and the sandbox goes on.
    const flood = await live("while True: print('x' * 999)", 1)
    expect(flood.result).toMatchObject({ success: false, error: expect.stringMatching(/timeout/) })
    expect(flood.heard.map((piece) => piece.text).join("")).toBe(flood.result.stdout)
    expect(flood.after).toMatchObject({ _tag: "Right", right: { success: true, stdout: "after\n" } })
    // Killed for memory is the cgroup's word alone: a message the code sends in the runner's own form, saying so, is not (attack 40 F3).
    const forged = await live("import json, os, struct\nd = json.dumps({'failed': 'the sandbox was killed: it went over its memory limit of 1024 MiB'}).encode()\nos.write(4, struct.pack('>I', len(d)) + d)\nimport time\ntime.sleep(1)")
    expect(forged.result.success).toBe(false)
    expect(forged.killedForMemory).toBe(false)
    const hungry = await live("b = bytearray(4 * 1024 * 1024 * 1024)")
    expect(hungry.result.success).toBe(false)
    expect(hungry.killedForMemory).toBe(/^the sandbox was killed: it went over its memory limit/.test(hungry.result.error ?? ""))
  }, 60_000)

  it.skipIf(skip)("idle sandboxes are snapshotted and resume transparently, ten cycles in a row losing nothing", async () => {
    const id = (await api("/api/sandboxes", { body: { timeout_seconds: 30 } })).json.id
    // A link to a host file, left in the work dir: the gateway copies it as a link and never reads through it.
    const hostFile = path.join(os.tmpdir(), `sluice-host-secret-${process.pid}`)
    fs.writeFileSync(hostFile, "host secret")
    await execute(id, `import os\nos.symlink(${JSON.stringify(hostFile)}, 'host-link')`)
    await execute(id, "import threading, socket\nlog = []\nlock = threading.Lock()\nconn = socket.socket()\nimport numpy, pandas\narr = numpy.arange(5)\nframe = pandas.DataFrame({'a': [1, 2]})")
    for (let cycle = 0; cycle < 10; cycle++) {
      await eventually(() => api(`/api/sandboxes/${id}`), (res) => res.json.status === "snapshotted", `snapshot ${cycle}`, 10_000)
      const resumed = await execute(id, `log.append(${cycle})\nopen('file-${cycle}', 'w').write('${cycle}')\narr = arr + 1\nprint(len(log))`)
      expect([cycle, resumed.success, resumed.error]).toEqual([cycle, true, null])
      expect(resumed.stdout).toBe(`${cycle + 1}\n`)
    }
    const kept = await execute(id, "import os\nprint(log, sorted(os.listdir('.')), list(arr), frame['a'].sum(), 'conn' in globals(), type(lock).__name__)")
    expect(kept.stdout).toBe(`[0, 1, 2, 3, 4, 5, 6, 7, 8, 9] ${JSON.stringify([...Array.from({ length: 10 }, (_, i) => `file-${i}`), "host-link"]).replace(/"/g, "'").replace(/,/g, ", ")} [10, 11, 12, 13, 14] 3 False lock\n`)
    const link = await execute(id, "print(os.readlink('host-link'))\nopen('host-link').read()")
    expect(link).toMatchObject({ success: false, stdout: `${hostFile}\n`, error: expect.stringMatching(/FileNotFoundError/) })
    fs.rmSync(hostFile)
    const record = (await api(`/api/sandboxes/${id}`)).json
    expect(record).toMatchObject({ unpicklable: ["conn"], timeout_seconds: 30, executions: 14 })
    await api(`/api/sandboxes/${id}`, { method: "DELETE" })
  }, 120_000)

  it.skipIf(skip)("MCP tools for keys with execute: create, run code that queries through the gate, delete", async () => {
    const connect = async (key: string) => {
      const client = new Client({ name: "sandbox-test", version: "1.0.0" })
      await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gateway.url), { requestInit: { headers: { "x-api-key": key } } }))
      return client
    }
    const readers = await connect(reader)
    expect((await readers.listTools()).tools.map((t) => t.name).filter((name) => name.startsWith("sandbox_"))).toEqual([])
    await readers.close()
    const owners = await connect(owner)
    const created = await owners.callTool({ name: "sandbox_create", arguments: { connection_name: "pg" } })
    const id = JSON.parse((created.content as Array<{ text: string }>)[0]!.text).id
    const ran = await owners.callTool({ name: "sandbox_execute", arguments: { sandbox_id: id, code: "import sluice\nprint(sluice.query('select email from customers order by id').rows)" } })
    expect(ran.structuredContent).toMatchObject({ success: true, stdout: "[['[REDACTED]'], ['[REDACTED]']]\n" })
    const audit = (await api("/api/audit?limit=50")).json.items
    const call = audit.find((row: any) => row.event_type === "mcp_tool_call" && row.details?.tool === "sandbox_execute")
    expect(call, JSON.stringify(audit.slice(0, 5))).toBeDefined()
    expect(audit.some((row: any) => row.event_type === "query" && row.request_id === call.request_id && row.sql === "select email from customers order by id")).toBe(true)
    const removed = await owners.callTool({ name: "sandbox_delete", arguments: { sandbox_id: id } })
    expect(JSON.parse((removed.content as Array<{ text: string }>)[0]!.text)).toMatchObject({ id, deleted: true })
    await owners.close()
  }, 60_000)

})

describe("sandboxes on the test clock (issue 29)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let key: string

  beforeAll(async () => {
    if (skip) return
    gateway = await startInProcess({ SP_NOTEBOOK_IDLE_SNAPSHOT_SECONDS: "30" }, { testClock: true })
    key = await gateway.keyWith(["read", "query", "execute"])
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key, ...options })
  const advance = (seconds: number) => gateway.runtime.runPromise(TestClock.adjust(Duration.seconds(seconds)))
  const stillIdle = async (id: string) => {
    // A snapshot that was due would have begun on its own fiber by now.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await api(`/api/sandboxes/${id}`)).json.status).toBe("idle")
  }
  const snapshotted = (id: string) => eventually(() => api(`/api/sandboxes/${id}`), (res) => res.json.status === "snapshotted", "the snapshot", 10_000)

  it.skipIf(skip)("idle exactly as long as the setting, a sandbox is snapshotted; a call resumes it with its state and timeout, and its idle time starts again", async () => {
    const id = (await api("/api/sandboxes", { body: { timeout_seconds: 45 } })).json.id
    expect((await api(`/api/sandboxes/${id}/execute`, { body: { code: "x = 41" } })).json.success).toBe(true)
    await advance(29)
    await stillIdle(id)
    await advance(2)
    await snapshotted(id)
    const resumed = (await api(`/api/sandboxes/${id}/execute`, { body: { code: "x += 1\nprint(x)" } })).json
    expect(resumed).toMatchObject({ success: true, stdout: "42\n" })
    expect((await api(`/api/sandboxes/${id}`)).json).toMatchObject({ status: "idle", timeout_seconds: 45 })
    await advance(29)
    await stillIdle(id)
    await advance(2)
    await snapshotted(id)
    await api(`/api/sandboxes/${id}`, { method: "DELETE" })
  }, 60_000)
})

describe("sandboxes at capacity (issue 29)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let owner: string

  // Idle sandboxes are not snapshotted here while the test runs (the default is 15 min), so ten stay running.
  beforeAll(async () => {
    if (skip) return
    gateway = await startInProcess({ SP_PER_KEY_RPM: "100000", SP_RATE_LIMIT_EXPENSIVE_RPM: "100000", SP_PER_ORG_RPM: "100000" })
    owner = await gateway.keyWith(["read", "query", "execute"])
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: owner, ...options })

  it.skipIf(skip)("at most ten run at once; the eleventh is refused clearly", async () => {
    const made: Array<string> = []
    for (let i = 0; i < 10; i++) {
      const created = await api("/api/sandboxes", { body: { label: `n${i}` } })
      expect(created.status, created.text).toBe(201)
      made.push(created.json.id)
    }
    const eleventh = await api("/api/sandboxes", { body: {} })
    expect([eleventh.status, eleventh.json.code]).toEqual([429, "capacity_reached"])
    await Promise.all(made.map((id) => api(`/api/sandboxes/${id}`, { method: "DELETE" })))
    expect((await api("/api/sandboxes", { body: {} })).status).toBe(201)
  }, 60_000)
})

describe("sandbox snapshots expire (issue 29)", () => {
  let gateway: Gateway

  beforeAll(async () => {
    if (skip) return
    gateway = await startApp({ env: { SP_NOTEBOOK_IDLE_SNAPSHOT_SECONDS: "1", SP_NOTEBOOK_SNAPSHOT_EXPIRATION_SECONDS: "2" } })
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
  })

  it.skipIf(skip)("a snapshot unused past its expiration is deleted by the loop, and execute says it expired", async () => {
    const key = await localKey(gateway)
    const created = await request(gateway.url, "/api/sandboxes", { key, body: {} })
    expect(created.status, created.text).toBe(201)
    const id = created.json.id
    await request(gateway.url, `/api/sandboxes/${id}/execute`, { key, body: { code: "x = 1" } })
    const record = () => request(gateway.url, `/api/sandboxes/${id}`, { key })
    await eventually(record, (res) => res.json.status === "snapshotted", "the snapshot", 10_000)
    await eventually(record, (res) => res.json.status === "stopped", "the snapshot's expiry", 15_000)
    const expired = await request(gateway.url, `/api/sandboxes/${id}/execute`, { key, body: { code: "print(x)" } })
    expect([expired.status, expired.json.code]).toEqual([410, "gone"])
    expect(expired.json.message).toMatch(/expired/)
  }, 60_000)
})

describe("sandboxes across a gateway restart, and in cloud mode (issue 29)", () => {
  it.skipIf(skip)("a gateway that stops snapshots its sandboxes; after a restart they resume with their state", async () => {
    const dataDir = tempDataDir()
    const first = await startApp({ dataDir })
    const key = await localKey(first)
    const id = (await request(first.url, "/api/sandboxes", { key, body: {} })).json.id
    await request(first.url, `/api/sandboxes/${id}/execute`, { key, body: { code: "kept = [1, 2, 3]\nopen('note.txt', 'w').write('written before the restart')" } })
    await first.stop()
    const second = await startApp({ dataDir })
    try {
      const again = await localKey(second)
      expect((await request(second.url, `/api/sandboxes/${id}`, { key: again })).json).toMatchObject({ status: "snapshotted" })
      const resumed = await request(second.url, `/api/sandboxes/${id}/execute`, { key: again, body: { code: "print(kept, open('note.txt').read())" } })
      expect(resumed.json).toMatchObject({ success: true, stdout: "[1, 2, 3] written before the restart\n" })
    } finally {
      await second.stop()
    }
  }, 90_000)

  it.skipIf(skip)("in cloud mode the routes answer 501 until a remote sandbox provider is configured", async () => {
    const idp = await startIdentityProvider()
    const database = await createTestDatabase()
    const gateway = await startApp({ databaseUrl: database.url, env: { SP_DEPLOYMENT_MODE: "cloud", SP_JWKS_URL: idp.jwksUrl, SP_RATE_LIMIT_AUTH_RPM: "10000" } })
    try {
      const headers = { authorization: `Bearer ${await idp.token({ sub: "user_ann", orgId: "org_sa" })}` }
      for (const [route, body] of [
        ["/api/sandboxes", {}],
        ["/api/notebook-sessions", {}]
      ] as const) {
        const refused = await request(gateway.url, route, { headers, body })
        expect([route, refused.status, refused.json.code]).toEqual([route, 501, "not_available"])
        expect(refused.json.message).toMatch(/remote sandbox provider/)
      }
      expect((await request(gateway.url, "/api/sandboxes", { headers })).json.items).toEqual([])
    } finally {
      await gateway.stop()
      await database.drop()
      await idp.close()
    }
  }, 90_000)
})
