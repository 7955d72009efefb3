/**
 * Knowledge search at size: the labelled set (220 entries, 120 questions) among generated entries
 * up to 10,000 in all, written through the REST API; then the time a search takes when the org's
 * index must be rebuilt (indexing), warm search latency over REST, and recall@5 / MRR of the
 * labelled questions with the generated entries as distractors. Not a test: prints Markdown for
 * bench/README.md.
 *
 *   npm run bench:knowledge [-- --entries 10000 --store postgresql|embedded --queries 480]
 */
import * as os from "node:os"
import { performance } from "node:perf_hooks"
import { parseArgs } from "node:util"
import { entryBody, LABELLED, LABELLED_CONNECTIONS, relevance } from "../test/fixtures/knowledge/Labelled"
import { localKey, startGateway } from "../test/support/Gateway"
import { request } from "../test/support/Http"
import { createTestDatabase } from "../test/support/Servers"
import { UNLIMITED } from "./support/Load"

const { values } = parseArgs({
  options: { entries: { type: "string", default: "10000" }, store: { type: "string", default: "postgresql" }, queries: { type: "string", default: "480" } }
})
const ENTRIES = Number(values.entries)
const QUERIES = Number(values.queries)
const STORE = values.store
if (!(ENTRIES >= LABELLED.entries.length) || !(QUERIES > 0) || (STORE !== "postgresql" && STORE !== "embedded")) {
  console.error("usage: npm run bench:knowledge -- [--entries 10000] [--store postgresql|embedded] [--queries 480]")
  process.exit(2)
}

// Generated entries: a data wiki's vocabulary recombined, so they compete with the labelled ones for every query.
const SUBJECTS = ["orders", "refunds", "invoices", "subscriptions", "customers", "sessions", "tickets", "shipments", "payouts", "campaigns", "inventory", "headcount"]
const ASPECTS = ["definition", "freshness", "ownership", "late-data", "dedup", "currency", "timezone", "backfill", "access", "retention", "sampling", "joins"]
const SENTENCES = [
  (s: string, a: string) => `The ${s} model's ${a.replace("-", " ")} is owned by the analytics engineering team.`,
  (s: string, a: string) => `When ${s} look wrong, check ${a.replace("-", " ")} first: most tickets about \`fct_${s}\` come from it.`,
  (s: string) => `Use \`analytics.fct_${s}\` rather than the raw \`src_${s}\` tables; the raw ones repeat rows after retries.`,
  (s: string, a: string) => `We agreed in a review that ${s} ${a.replace("-", " ")} follows the finance calendar, not the webshop's.`,
  (s: string) => `Dashboards on ${s} refresh hourly; the nightly job rebuilds the last 3 days.`
]
const generated = (i: number) => {
  const subject = SUBJECTS[i % SUBJECTS.length]!
  const aspect = ASPECTS[Math.floor(i / SUBJECTS.length) % ASPECTS.length]!
  const category = ["context", "decisions", "rules", "troubleshooting"][i % 4]!
  return {
    scope: "project",
    scope_ref: `team-${i % 40}`,
    category,
    title: `${subject}-${aspect}-${i}`,
    body: [0, 1, 2, 3].map((k) => SENTENCES[(i + k) % SENTENCES.length]!(SUBJECTS[(i + k * 5) % SUBJECTS.length]!, ASPECTS[(i + k * 7) % ASPECTS.length]!)).join(" ")
  }
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const ms = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(0))

const store = STORE === "postgresql" ? await createTestDatabase() : undefined
const gateway = await startGateway({ env: UNLIMITED, ...(store === undefined ? {} : { databaseUrl: store.url }) })
try {
  const key = await localKey(gateway)
  const api = (route: string, body?: unknown, method?: string) => request(gateway.url, route, { key, ...(body === undefined ? {} : { body }), ...(method === undefined ? {} : { method }) })
  for (const name of LABELLED_CONNECTIONS) await api("/api/connections", { name, db_type: "postgresql", host: "127.0.0.1", port: 5432, database: "postgres", username: "root" })

  const written = performance.now()
  const idOf = new Map<string, string>()
  for (const entry of LABELLED.entries) idOf.set(entry.key, (await api("/api/knowledge", entryBody(entry))).json.id)
  let next = 0
  const extra = ENTRIES - LABELLED.entries.length
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < extra) {
        const created = await api("/api/knowledge", generated(next++))
        if (created.status !== 201) throw new Error(`write failed: ${created.status} ${created.text}`)
      }
    })
  )
  const writeSeconds = (performance.now() - written) / 1000
  console.error(`${ENTRIES} entries written in ${writeSeconds.toFixed(1)} s`)

  // Indexing: the first search after a change rebuilds the org's index; timed against a warm search of the same query.
  const query = `/api/knowledge?limit=5&q=${encodeURIComponent("refund rule for EU customers")}`
  const rebuilds: Array<number> = []
  for (let round = 0; round < 5; round++) {
    const [first] = LABELLED.entries
    await api(`/api/knowledge/${idOf.get(first!.key)}`, entryBody(first!), "PUT")
    const cold = performance.now()
    await api(query)
    const coldMs = performance.now() - cold
    const warm = performance.now()
    await api(query)
    rebuilds.push(coldMs - (performance.now() - warm))
  }
  rebuilds.sort((a, b) => a - b)

  // Warm search latency, one at a time, and relevance with the generated entries as distractors.
  const keyOf = new Map([...idOf].map(([k, id]) => [id, k]))
  const latencies: Array<number> = []
  const rankings: Array<{ relevant: ReadonlyArray<string>; ranked: ReadonlyArray<string | undefined> }> = []
  for (let i = 0; i < QUERIES; i++) {
    const question = LABELLED.questions[i % LABELLED.questions.length]!
    const started = performance.now()
    const found = await api(`/api/knowledge?limit=5&q=${encodeURIComponent(question.q)}`)
    latencies.push(performance.now() - started)
    if (i < LABELLED.questions.length) rankings.push({ relevant: question.relevant, ranked: found.json.items.map((item: { id: string }) => keyOf.get(item.id)) })
  }
  latencies.sort((a, b) => a - b)
  const { recallAt5, mrr } = relevance(rankings)

  console.log(`Machine: ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
  console.log(`${ENTRIES} entries (${LABELLED.entries.length} labelled), ${STORE} store, ${QUERIES} searches over REST one at a time (limit 5).\n`)
  console.log("| entries | written (REST, 16 at a time) | index rebuild p50 / max ms | search p50 / p99 ms | recall@5 | MRR |")
  console.log("|---:|---:|---:|---:|---:|---:|")
  console.log(
    `| ${ENTRIES} | ${writeSeconds.toFixed(1)} s | ${ms(percentile(rebuilds, 0.5))} / ${ms(rebuilds.at(-1)!)} | ${ms(percentile(latencies, 0.5))} / ${ms(percentile(latencies, 0.99))} | ${recallAt5.toFixed(3)} | ${mrr.toFixed(3)} |`
  )
} finally {
  await gateway.kill()
  await store?.drop()
}
