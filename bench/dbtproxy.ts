/**
 * The dbt proxy: a point query and a CREATE TABLE AS through it versus the same statements on a
 * direct `pg` session to the same branch database, against a gateway process. Not a test: prints
 * Markdown for bench/README.md.
 *
 *   npm run bench:dbtproxy [-- --points 3000 --ctas 40 --store embedded|postgresql --cpu-prof /tmp/prof]
 */
import { spawn } from "node:child_process"
import * as os from "node:os"
import { performance } from "node:perf_hooks"
import { parseArgs } from "node:util"
import pg from "pg"
import { freePort, localKey, startGateway } from "../test/support/Gateway"
import { request } from "../test/support/Http"
import { createTestDatabase, dropBranchDatabases, TEST_PG_URL } from "../test/support/Servers"
import { UNLIMITED } from "./support/Load"

const { values } = parseArgs({ options: { points: { type: "string", default: "3000" }, ctas: { type: "string", default: "200" }, "cpu-prof": { type: "string", default: "" }, store: { type: "string", default: "embedded" } } })
const POINTS = Number(values.points)
const CTAS = Number(values.ctas)

const RELAY = `
const net = require("node:net")
const [port, host, upstreamPort] = process.argv.slice(1)
net.createServer((socket) => {
  socket.setNoDelay(true)
  const upstream = net.connect(Number(upstreamPort), host)
  upstream.setNoDelay(true)
  socket.pipe(upstream).pipe(socket)
  socket.on("error", () => upstream.destroy())
  upstream.on("error", () => socket.destroy())
}).listen(Number(port), "127.0.0.1", () => console.log("listening"))
`

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const figures = (samples: ReadonlyArray<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) }
}
const ms = (n: number) => (n < 10 ? n.toFixed(3) : n.toFixed(1))

const database = await createTestDatabase()
await database.query("create table orders (id int primary key, total numeric, note text); insert into orders select g, g * 1.5, md5(g::text) from generate_series(1, 20000) g")
const proxyPort = await freePort()
const made: Array<string> = []
// --cpu-prof <dir>: the gateway writes a CPU profile there when it stops.
// --store postgresql: the gateway's own store (and so its audit rows) on PostgreSQL instead of the embedded one.
const store = values.store === "postgresql" ? await createTestDatabase() : undefined
const gateway = await startGateway({ env: { ...UNLIMITED, SP_DBT_PROXY_PORT: String(proxyPort) }, ...(store === undefined ? {} : { databaseUrl: store.url }), ...(values["cpu-prof"] === "" ? {} : { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${values["cpu-prof"]}`] }) })
try {
  const admin = await localKey(gateway)
  const key = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "bench", scopes: ["read", "write", "dbt_proxy"] } })).json.key as string
  const api = async (route: string, body: unknown) => {
    const res = await request(gateway.url, route, { key, body })
    if (res.status >= 300) throw new Error(`${route}: ${res.status} ${res.text}`)
    return res.json
  }
  await api("/api/connections", { name: "wh", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" })
  const branch = await api("/api/connections/wh/dbbranch/projects/bench/branches", { name: "b" })
  made.push(branch.database)
  const { token } = await api("/api/dbt-proxy/run-tokens", { connection_name: "wh", project: "bench", branch: "b", run_id: "bench" })

  const proxied = new pg.Client({ host: "127.0.0.1", port: proxyPort, user: "dbt", database: "x", password: token })
  const directUrl = new URL(TEST_PG_URL)
  directUrl.pathname = `/${branch.database}`
  const direct = new pg.Client({ connectionString: directUrl.toString() })
  // The floor any proxy pays: a plain TCP relay (no gate, no parse, no audit) in a Node process of its own, as the gateway is;
  // one in this process would skip the two wakeups of another process every round trip costs.
  const relayPort = await freePort()
  const relay = spawn(process.execPath, ["-e", RELAY, String(relayPort), directUrl.hostname, directUrl.port || "5432"], { stdio: ["ignore", "pipe", "inherit"] })
  await new Promise<void>((resolve, reject) => {
    relay.stdout!.once("data", () => resolve())
    relay.once("exit", (code) => reject(new Error(`the relay exited ${code}`)))
  })
  const relayUrl = new URL(directUrl.toString())
  relayUrl.port = String(relayPort)
  const relayed = new pg.Client({ connectionString: relayUrl.toString() })
  await proxied.connect()
  await direct.connect()
  await relayed.connect()

  const measure = async (client: pg.Client, n: number, sql: (i: number) => string) => {
    const samples: Array<number> = []
    for (let i = 0; i < n; i++) {
      const started = performance.now()
      await client.query(sql(i))
      samples.push(performance.now() - started)
    }
    return figures(samples)
  }
  // Warm both paths (plans, the proxy's parser), then alternate rounds so drift hits both alike.
  await measure(proxied, 200, (i) => `select id, total from orders where id = ${(i % 20000) + 1}`)
  await measure(direct, 200, (i) => `select id, total from orders where id = ${(i % 20000) + 1}`)
  const point = { proxied: [] as Array<{ p50: number; p99: number }>, direct: [] as Array<{ p50: number; p99: number }>, relayed: [] as Array<{ p50: number; p99: number }> }
  await measure(relayed, 200, (i) => `select id, total from orders where id = ${(i % 20000) + 1}`)
  for (let round = 0; round < 3; round++) {
    point.direct.push(await measure(direct, POINTS / 3, (i) => `select id, total from orders where id = ${(i % 20000) + 1}`))
    point.proxied.push(await measure(proxied, POINTS / 3, (i) => `select id, total from orders where id = ${(i % 20000) + 1}`))
    point.relayed.push(await measure(relayed, POINTS / 3, (i) => `select id, total from orders where id = ${(i % 20000) + 1}`))
  }
  // One of each in turn, so the catalog's growth and the server's checkpoints weigh on both alike.
  const ctas = { direct: [] as Array<number>, proxied: [] as Array<number>, relayed: [] as Array<number> }
  for (let i = 0; i < CTAS; i++) {
    for (const [client, samples, prefix] of [[direct, ctas.direct, "d"], [proxied, ctas.proxied, "p"], [relayed, ctas.relayed, "r"]] as const) {
      const started = performance.now()
      await client.query(`create table ctas_${prefix}_${i} as select * from orders where id % 10 = ${i % 10}`)
      samples.push(performance.now() - started)
    }
  }
  const ctasDirect = figures(ctas.direct)
  const ctasProxied = figures(ctas.proxied)
  const ctasRelayed = figures(ctas.relayed)
  await proxied.end()
  await direct.end()
  await relayed.end()
  relay.kill()

  const mid = (list: ReadonlyArray<{ p50: number; p99: number }>) => [...list].sort((a, b) => a.p50 - b.p50)[1]!
  const row = (what: string, through: { p50: number; p99: number }, plain: { p50: number; p99: number }) =>
    `| ${what} | p50 ${ms(through.p50)} ms, p99 ${ms(through.p99)} ms | p50 ${ms(plain.p50)} ms, p99 ${ms(plain.p99)} ms | +${ms(through.p50 - plain.p50)} ms |`
  console.log(`### dbt proxy (${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, ${values.store} store)\n`)
  console.log("| statement | through the proxy | direct `pg` session | proxy adds (p50) |\n|---|---|---|---|")
  console.log(row(`point query (simple protocol, n=${POINTS}, middle of 3 rounds)`, mid(point.proxied), mid(point.direct)))
  console.log(row(`CREATE TABLE AS of 2,000 rows (n=${CTAS})`, ctasProxied, ctasDirect))
  console.log(row("point query through a bare TCP relay, a Node process of its own (the floor of any proxy process)", mid(point.relayed), mid(point.direct)))
  console.log(row(`CREATE TABLE AS through the bare relay (n=${CTAS})`, ctasRelayed, ctasDirect))
} finally {
  await gateway.stop()
  await dropBranchDatabases(made)
  await database.drop()
  await store?.drop()
}
