import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { entryBody, LABELLED, LABELLED_CONNECTIONS, relevance } from "../fixtures/knowledge/Labelled"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"

// Set from the measured baseline (bench/README.md, 2026-11-27: recall@5 0.904, MRR 0.881) less a margin for ties
// (ranked by random ids): a search that ranks clearly worse fails.
const MIN_RECALL_AT_5 = 0.87
const MIN_MRR = 0.85

describe("knowledge search finds the right entry for a task: recall@5 and MRR on a labelled set (issue 20)", () => {
  let gateway: Gateway
  let admin: string
  const idOf = new Map<string, string>()

  beforeAll(async () => {
    gateway = await startApp({})
    admin = await localKey(gateway)
    for (const name of LABELLED_CONNECTIONS) {
      const created = await request(gateway.url, "/api/connections", { key: admin, body: { name, db_type: "postgresql", host: "127.0.0.1", port: 5432, database: "postgres", username: "root" } })
      expect(created.status, created.text).toBe(201)
    }
    for (const entry of LABELLED.entries) {
      const created = await request(gateway.url, "/api/knowledge", { key: admin, body: entryBody(entry) })
      expect(created.status, created.text).toBe(201)
      idOf.set(entry.key, created.json.id)
    }
  }, 120_000)
  afterAll(() => gateway?.stop())

  it("ranks the labelled entries in the first five, first where it can", async () => {
    const keyOf = new Map([...idOf].map(([key, id]) => [id, key]))
    const rankings = []
    const misses: Array<string> = []
    for (const { q, relevant } of LABELLED.questions) {
      const found = await request(gateway.url, `/api/knowledge?limit=5&q=${encodeURIComponent(q)}`, { key: admin })
      expect(found.status, found.text).toBe(200)
      const ranked: Array<string | undefined> = found.json.items.map((item: { id: string }) => keyOf.get(item.id))
      rankings.push({ relevant, ranked })
      if (!ranked.some((key) => key !== undefined && relevant.includes(key))) misses.push(`${q} → wanted ${relevant.join(", ")}, got ${ranked.join(", ")}`)
    }
    const { recallAt5, mrr } = relevance(rankings)
    console.log(`knowledge relevance: recall@5 ${recallAt5.toFixed(3)}, MRR ${mrr.toFixed(3)} over ${LABELLED.questions.length} questions; misses:\n${misses.join("\n")}`)
    expect(recallAt5).toBeGreaterThanOrEqual(MIN_RECALL_AT_5)
    expect(mrr).toBeGreaterThanOrEqual(MIN_MRR)
  }, 120_000)
})
