/**
 * `GET /health` side by side (issue 28): Sluice with its fast lane (the default), Sluice with
 * every request through the Effect app (`SP_FAST_LANE=false`), and the floor, a `node:http` server
 * answering the same constant body (with only its type and length, and with Sluice's envelope
 * headers too), each in its own process; autocannon with 8 connections, cells
 * interleaved over rounds, server CPU from /proc/<pid>/stat. Not a test: prints Markdown for
 * bench/README.md.
 *
 *   npm run bench:health [-- --seconds 4 --rounds 3 --connections 8]
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import { parseArgs } from "node:util"
import autocannon from "autocannon"
import { SECURITY_HEADERS } from "../src/gate/Envelope"
import { startGateway } from "../test/support/Gateway"

const { values } = parseArgs({ options: { seconds: { type: "string", default: "4" }, rounds: { type: "string", default: "3" }, connections: { type: "string", default: "8" } } })
const seconds = Number(values.seconds)
const connections = Number(values.connections)

/** A floor server: `node:http` answering the body with only its type and length, or with Sluice's envelope headers too (`envelope`). */
const floorServer = (envelope: boolean) => `
const http = require("node:http")
const { randomUUID } = require("node:crypto")
const body = Buffer.from(JSON.stringify({ status: "healthy" }))
const head = ["content-type", "application/json", "content-length", String(body.length)]
const envelope = ${envelope} ? ${JSON.stringify(Object.entries(SECURITY_HEADERS).flat())} : null
const server = http.createServer((req, res) => {
  res.writeHead(200, envelope === null ? head : [...head, ...envelope, "x-request-id", randomUUID(), "cache-control", "no-store"])
  res.end(body)
})
server.listen(0, "127.0.0.1", () => console.log("listening " + server.address().port))
`

/** A floor server: its URL and process. */
const startFloor = (envelope: boolean) =>
  new Promise<{ url: string; process: ChildProcess }>((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", floorServer(envelope)], { stdio: ["ignore", "pipe", "inherit"] })
    child.stdout!.on("data", (chunk: Buffer) => {
      const port = /listening (\d+)/.exec(chunk.toString())?.[1]
      if (port !== undefined) resolve({ url: `http://127.0.0.1:${port}`, process: child })
    })
    child.on("exit", (code) => reject(new Error(`the floor server exited with ${code}`)))
  })

const TICKS_PER_MS = 100 / 1000
/** CPU time a process has used, in ms (utime + stime). */
const cpuMs = (pid: number) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_MS
}

const measure = async (url: string, pid: number) => {
  await autocannon({ url: `${url}/health`, connections, duration: 1 })
  const before = cpuMs(pid)
  const result = await autocannon({ url: `${url}/health`, connections, duration: seconds })
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`)
  return { perSecond: result.requests.average, p50: result.latency.p50, cpuMsPerOp: (cpuMs(pid) - before) / result.requests.total }
}

const [floor, envelopeFloor] = await Promise.all([startFloor(false), startFloor(true)])
const [fast, effectOnly] = await Promise.all([startGateway({ env: { SP_FAST_LANE: "true" } }), startGateway({ env: { SP_FAST_LANE: "false" } })])
const targets = [
  ["node:http (constant)", floor.url, floor.process.pid!],
  ["node:http (constant, Sluice's headers)", envelopeFloor.url, envelopeFloor.process.pid!],
  ["Sluice, fast lane", fast.url, fast.process.pid!],
  ["Sluice, Effect app only", effectOnly.url, effectOnly.process.pid!]
] as const
const figures = new Map<string, Array<Awaited<ReturnType<typeof measure>>>>()
try {
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [name, url, pid] of targets) {
      const measured = await measure(url, pid)
      figures.set(name, [...(figures.get(name) ?? []), measured])
      console.error(`round ${round + 1} ${name}: ${Math.round(measured.perSecond)} req/s`)
    }
  }
} finally {
  floor.process.kill()
  envelopeFloor.process.kill()
  await Promise.all([fast.stop(), effectOnly.stop()])
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const floorPerSecond = median(figures.get(targets[0][0])!.map((f) => f.perSecond))
console.log(`Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
console.log(`autocannon, ${connections} connections, ${seconds} s per cell after 1 s of warm-up, ${values.rounds} interleaved rounds (medians); load generator on the same cores.\n`)
console.log("| target | req/s | p50 ms | × floor | server CPU ms/op |")
console.log("|---|---:|---:|---:|---:|")
for (const [name] of targets) {
  const runs = figures.get(name)!
  const perSecond = median(runs.map((f) => f.perSecond))
  console.log(`| ${name} | ${Math.round(perSecond)} | ${median(runs.map((f) => f.p50))} | ${(perSecond / floorPerSecond).toFixed(2)} | ${median(runs.map((f) => f.cpuMsPerOp)).toFixed(3)} |`)
}
