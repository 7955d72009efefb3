/**
 * Workspace projects over git: a push and a clone of a 50 MB repository through the gateway versus
 * git's own `git http-backend` behind a bare Node CGI bridge (no gate), the gateway's memory while a
 * 500 MB push streams through it, and the time to make a database branch of a 50 MB database. Not a
 * test: prints Markdown for bench/README.md.
 *
 *   npm run bench:git [-- --runs 3 --big-mb 500]
 */
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { parseArgs } from "node:util"
import { freePort, localKey, startGateway } from "../test/support/Gateway"
import { git as runGit } from "../test/support/Git"
import { request } from "../test/support/Http"
import { createTestDatabase } from "../test/support/Servers"
import { UNLIMITED } from "./support/Load"

const { values } = parseArgs({ options: { runs: { type: "string", default: "3" }, "big-mb": { type: "string", default: "500" } } })
const RUNS = Number(values.runs)
const BIG_MB = Number(values["big-mb"])
const work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-bench-git-"))

const git = async (args: ReadonlyArray<string>, cwd: string) => {
  // Pushes past 1 MiB go chunked, as large ones do.
  const ran = await runGit(["-c", "http.postBuffer=1048576", ...args], cwd, { HOME: work })
  if (ran.code !== 0) throw new Error(`git ${args.join(" ")}: ${ran.stderr}`)
}

/** A repository of `mb` one-megabyte files of random bytes (which do not compress), committed once. */
const makeRepository = async (name: string, mb: number) => {
  const dir = path.join(work, name)
  fs.mkdirSync(dir)
  await git(["init", "-q", "."], dir)
  for (let i = 0; i < mb; i++) fs.writeFileSync(path.join(dir, `blob-${i}.bin`), randomBytes(1024 * 1024))
  await git(["add", "."], dir)
  await git(["commit", "-q", "-m", "data"], dir)
  return dir
}

/** `git http-backend` for a folder of bare repositories, behind the least a Node bridge can be: no gate, both ways streamed. */
const bareBackend = async (root: string) => {
  const port = await freePort()
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x")
    const child = spawn("git", ["http-backend"], {
      env: { PATH: process.env["PATH"] ?? "/usr/bin", GIT_PROJECT_ROOT: root, GIT_HTTP_EXPORT_ALL: "1", PATH_INFO: url.pathname, QUERY_STRING: url.search.slice(1), REQUEST_METHOD: req.method ?? "GET", CONTENT_TYPE: req.headers["content-type"] ?? "", REMOTE_USER: "bench", ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}) }
    })
    req.pipe(child.stdin)
    let head = Buffer.alloc(0)
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk])
      const end = head.indexOf("\r\n\r\n")
      if (end === -1) return
      child.stdout.off("data", onData)
      const headers: Record<string, string> = {}
      let status = 200
      for (const line of head.subarray(0, end).toString().split("\r\n")) {
        const [name, ...rest] = line.split(":")
        if (name!.toLowerCase() === "status") status = Number.parseInt(rest.join(":").trim(), 10)
        else headers[name!.toLowerCase()] = rest.join(":").trim()
      }
      res.writeHead(status, headers)
      res.write(head.subarray(end + 4))
      child.stdout.pipe(res)
    }
    child.stdout.on("data", onData)
  })
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const timed = async (run: () => Promise<void>) => {
  const started = performance.now()
  await run()
  return performance.now() - started
}
const median = (samples: ReadonlyArray<number>) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!

const rssOf = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024
}

const gateway = await startGateway({ env: { ...UNLIMITED, SP_GIT_PUSH_MAX_MB: String(BIG_MB + 100) } })
const bareRoot = path.join(work, "bare")
fs.mkdirSync(bareRoot)
const bare = await bareBackend(bareRoot)
const database = await createTestDatabase()
try {
  const admin = await localKey(gateway)
  const key = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "bench", scopes: ["read", "write", "admin"] } })).json.key as string
  const api = async (route: string, body?: unknown) => {
    const res = await request(gateway.url, route, { key, ...(body === undefined ? {} : { body }) })
    if (res.status >= 300) throw new Error(`${route}: ${res.status} ${res.text}`)
    return res.json
  }
  const remote = (id: string) => `${gateway.url.replace("http://", `http://git:${key}@`)}/git/${id}.git`

  const source = await makeRepository("source", 50)
  const rows: Array<string> = []
  const pushes = { gateway: [] as Array<number>, bare: [] as Array<number> }
  const clones = { gateway: [] as Array<number>, bare: [] as Array<number> }
  for (let run = 0; run < RUNS; run++) {
    const { id } = await api("/api/workspace-projects", { name: `bench-${run}` })
    await git(["init", "-q", "--bare", path.join(bareRoot, `r${run}.git`)], work)
    await git(["--git-dir", path.join(bareRoot, `r${run}.git`), "config", "http.receivepack", "true"], work)
    pushes.gateway.push(await timed(() => git(["push", "-q", remote(id), "main"], source)))
    pushes.bare.push(await timed(() => git(["push", "-q", `${bare.url}/r${run}.git`, "main"], source)))
    clones.gateway.push(await timed(() => git(["clone", "-q", remote(id), path.join(work, `g${run}`)], work)))
    clones.bare.push(await timed(() => git(["clone", "-q", `${bare.url}/r${run}.git`, path.join(work, `b${run}`)], work)))
  }
  const ratio = (ours: number, theirs: number) => (theirs / ours).toFixed(2)
  rows.push(`| push of 50 MB (random bytes) | ${median(pushes.gateway).toFixed(0)} ms | ${median(pushes.bare).toFixed(0)} ms | ${ratio(median(pushes.gateway), median(pushes.bare))}× |`)
  rows.push(`| clone of it | ${median(clones.gateway).toFixed(0)} ms | ${median(clones.bare).toFixed(0)} ms | ${ratio(median(clones.gateway), median(clones.bare))}× |`)

  const big = await makeRepository("big", BIG_MB)
  const { id } = await api("/api/workspace-projects", { name: "bench-big" })
  const pid = gateway.process.pid!
  const before = rssOf(pid)
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50)
  const bigPush = await timed(() => git(["push", "-q", remote(id), "main"], big))
  clearInterval(sampler)

  await database.query("create table facts as select g as id, md5(g::text) as a, md5((g * 7)::text) as b, now() as at from generate_series(1, 450000) g")
  const [size] = await database.query<{ mb: string }>(`select round(pg_database_size(current_database()) / 1048576.0)::text as mb`)
  await api("/api/connections", { name: "wh", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" })
  const branchTimes: Array<number> = []
  for (let run = 0; run < RUNS; run++) {
    branchTimes.push(await timed(() => api("/api/connections/wh/dbbranch/projects/bench/branches", { name: `b${run}` })))
  }
  for (let run = 0; run < RUNS; run++) await request(gateway.url, `/api/connections/wh/dbbranch/projects/bench/branches/b${run}`, { key, method: "DELETE" })

  console.log(`### Workspace git and database branches (${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, median of ${RUNS})\n`)
  console.log("| measure | through the gateway | bare `git http-backend` | gateway ÷ bare speed |\n|---|---|---|---|")
  for (const row of rows) console.log(row)
  console.log(`\n| measure | figure |\n|---|---|`)
  console.log(`| gateway RSS during a ${BIG_MB} MB push (${(bigPush / 1000).toFixed(1)} s) | ${before.toFixed(0)} MB before, ${peak.toFixed(0)} MB peak (+${(peak - before).toFixed(0)} MB) |`)
  console.log(`| database branch of a ${size!.mb} MB database (CREATE DATABASE … TEMPLATE, role, ownership) | ${median(branchTimes).toFixed(0)} ms |`)
} finally {
  await bare.close()
  await gateway.stop()
  await database.drop()
  fs.rmSync(work, { recursive: true, force: true })
}
