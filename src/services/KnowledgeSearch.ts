import { Effect } from "effect"
import MiniSearch from "minisearch"
import type { OrgId } from "../domain/Ids"
import { PROSE_STOPWORDS, stem, words } from "../domain/Words"
import { type EntryFilter, KnowledgeRepo, type SearchableEntry } from "../repos/KnowledgeRepo"

// Each arm ranks this many candidates; reciprocal rank fusion's constant and each arm's weight.
const CANDIDATES = 50
const RRF_K = 60
const WEIGHTS = { fullText: 1, bm25: 1, keywords: 0.7 } as const
const MAX_KEYWORDS = 8
// Entries indexed in memory at once, across organizations: the least recently searched org's index goes first past it.
const MAX_INDEXED_ENTRIES = 100_000

const processTerm = (term: string): string | null => (PROSE_STOPWORDS.has(term) ? null : stem(term))

/** An entry's title and body in lower case, for matching keywords as written. */
interface KeywordText {
  readonly id: string
  readonly text: string
  readonly fields: Record<string, unknown>
}

interface Indexed {
  readonly generation: string
  readonly search: MiniSearch<SearchableEntry>
  readonly texts: ReadonlyArray<KeywordText>
}

// Entries indexed between turns of the event loop: a rebuild of thousands never holds up other requests for long.
const INDEX_CHUNK = 250

const index = async (entries: ReadonlyArray<SearchableEntry>) => {
  const search = new MiniSearch<SearchableEntry>({
    fields: ["title", "body"],
    storeFields: ["scope", "scope_ref", "category", "status"],
    tokenize: words,
    processTerm,
    searchOptions: {
      boost: { title: 3 },
      prefix: (term) => term.length >= 5,
      // Typos: one edit in words of 5 letters or more, two in long ones.
      fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
      combineWith: "OR"
    }
  })
  await search.addAllAsync(entries, { chunkSize: INDEX_CHUNK })
  return search
}

/** The words of a query worth matching as written: not stopwords, 3 characters or more, at most MAX_KEYWORDS. */
const keywordsOf = (query: string) => [...new Set(words(query).filter((w) => w.length >= 3 && !PROSE_STOPWORDS.has(w)))].slice(0, MAX_KEYWORDS)

/** Entries whose text holds the query's keywords as written (inside identifiers too: `fct_orders`), the most keywords first, then the most recently updated. */
const keywordMatches = (texts: ReadonlyArray<KeywordText>, query: string, filter: EntryFilter) => {
  const keywords = keywordsOf(query)
  if (keywords.length === 0) return []
  const allowed = matches(filter)
  const found: Array<{ readonly id: string; readonly matched: number }> = []
  for (const entry of texts) {
    if (!allowed(entry.fields)) continue
    let matched = 0
    for (const keyword of keywords) if (entry.text.includes(keyword)) matched += 1
    if (matched > 0) found.push({ id: entry.id, matched })
  }
  // A stable sort: ties keep the entries' order, most recently updated first.
  return found.sort((a, b) => b.matched - a.matched).slice(0, CANDIDATES)
}

const matches = (filter: EntryFilter) => (stored: Record<string, unknown>) =>
  (filter.scope === undefined || stored["scope"] === filter.scope) &&
  (filter.scope_ref === undefined || stored["scope_ref"] === filter.scope_ref) &&
  (filter.category === undefined || stored["category"] === filter.category) &&
  (filter.status === undefined ? stored["status"] !== "archived" : stored["status"] === filter.status)

export interface KnowledgeHit {
  readonly id: string
  readonly score: number
}

/**
 * Hybrid retrieval over an organization's knowledge: PostgreSQL full-text (websearch_to_tsquery,
 * ts_rank_cd), BM25 with typo tolerance and keywords as written (in memory, over an org's active
 * entries, rebuilt when they change), fused by reciprocal rank.
 */
export class KnowledgeSearch extends Effect.Service<KnowledgeSearch>()("sluice/KnowledgeSearch", {
  effect: Effect.gen(function* () {
    const repo = yield* KnowledgeRepo
    const indexes = new Map<OrgId, Indexed>()

    /** The org's in-memory indexes as its entries stand: rebuilt when anything changed since they were built (here or on another replica). */
    const indexed = (orgId: OrgId, generation: string, entries: ReadonlyArray<SearchableEntry> | null) =>
      Effect.gen(function* () {
        const kept = indexes.get(orgId)
        const current: Indexed =
          entries === null && kept !== undefined
            ? kept
            : {
                generation,
                search: yield* Effect.promise(() => index(entries ?? [])),
                texts: (entries ?? []).map((entry) => ({
                  id: entry.id,
                  text: `${entry.title} ${entry.body}`.toLowerCase(),
                  fields: { scope: entry.scope, scope_ref: entry.scope_ref, category: entry.category, status: entry.status }
                }))
              }
        indexes.delete(orgId)
        indexes.set(orgId, current)
        let held = 0
        for (const each of indexes.values()) held += each.texts.length
        for (const [org, oldest] of indexes) {
          if (held <= MAX_INDEXED_ENTRIES || org === orgId) break
          indexes.delete(org)
          held -= oldest.texts.length
        }
        return current
      })

    /** The entries a filter allows that best answer `query`, best first, at most `limit`. */
    const search = (orgId: OrgId, query: string, filter: EntryFilter, limit: number) =>
      Effect.gen(function* () {
        let inputs = yield* repo.rankingInputs(orgId, filter, query, CANDIDATES, indexes.get(orgId)?.generation)
        // The index was current when asked, but dropped since (another org's search needed the room): read the entries after all.
        if (inputs.entries === null && !indexes.has(orgId)) inputs = yield* repo.rankingInputs(orgId, filter, query, CANDIDATES, undefined)
        const fullText = inputs.fullText
        const current = yield* indexed(orgId, inputs.generation, inputs.entries)
        const bm25 = current.search.search(query, { filter: matches(filter) }).slice(0, CANDIDATES)
        const keywords = keywordMatches(current.texts, query, filter)
        const fused = new Map<string, number>()
        const add = (ids: ReadonlyArray<string>, weight: number) => ids.forEach((id, rank) => fused.set(id, (fused.get(id) ?? 0) + weight / (RRF_K + rank + 1)))
        add(
          fullText.map((hit) => hit.id),
          WEIGHTS.fullText
        )
        add(
          bm25.map((hit) => String(hit.id)),
          WEIGHTS.bm25
        )
        add(
          keywords.map((hit) => hit.id),
          WEIGHTS.keywords
        )
        return [...fused]
          .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
          .slice(0, limit)
          .map(([id, score]): KnowledgeHit => ({ id, score: Number(score.toFixed(6)) }))
      })

    return { search } as const
  }),
  dependencies: [KnowledgeRepo.Default]
}) {}
