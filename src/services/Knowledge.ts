import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { Conflict, InsufficientScope, InvalidRequest, NotFound, PayloadTooLarge } from "../domain/Errors"
import {
  type CreateKnowledge,
  KNOWLEDGE_BODY_MAX_BYTES,
  type KnowledgeListItem,
  type KnowledgeStatus,
  type KnowledgeListParams,
  type RetrievalParams
} from "../domain/Knowledge"
import { decodeCursor, pageOf, TimeAndIdCursor } from "../domain/Pagination"
import { type Principal, principalLabel } from "../domain/Principal"
import { mayReadRows } from "../domain/Visibility"
import { type EntryContent, type EntryFilter, KnowledgeRepo, type RetrievalRow } from "../repos/KnowledgeRepo"
import { Connections } from "./Connections"
import { EvalAutorun } from "./EvalAutorun"
import { type KnowledgeHit, KnowledgeSearch } from "./KnowledgeSearch"

/**
 * An entry as this caller may see it: what an agent wrote that no person has approved (a pending
 * proposal, or one archived unapproved) is what a model wrote, perhaps after reading rows, so
 * without the query scope its title, text and size are withheld. A history version is judged by
 * its status alone.
 */
const seenBy = <T extends { readonly status: KnowledgeStatus; readonly title: string; readonly body?: string; readonly snippet?: string; readonly bytes?: number; readonly proposed_by_agent?: boolean; readonly approved_by?: string | null }>(
  principal: Principal,
  entry: T
): T => {
  const agents = entry.proposed_by_agent === undefined ? entry.status === "pending" : entry.proposed_by_agent && entry.approved_by === null
  if (!agents || mayReadRows(principal)) return entry
  return {
    ...entry,
    title: "",
    ...("body" in entry ? { body: "" } : {}),
    ...("snippet" in entry ? { snippet: "" } : {}),
    ...("bytes" in entry ? { bytes: 0 } : {}),
    withheld: ["title", "body"]
  }
}
const DEFAULT_LIMIT = 50
const DEFAULT_SEARCH_LIMIT = 10
const DEFAULT_SINCE_DAYS = 30

/** Who asks for knowledge, for its retrieval log: a REST search, an MCP tool, the built-in agent. */
export type RetrievalSource = "rest" | "mcp:get_knowledge" | "mcp:search_knowledge"

/** Who proposes an entry: an MCP client's agent, or the built-in agent (whose input includes rows it read, so never trusted as is). */
export type Proposer = "mcp" | "agent_run"

const notFound = (id: string) => new NotFound({ message: `There is no knowledge entry ${id}` })
const newId = () => `kn_${randomUUID().replaceAll("-", "")}`

const contentOf = (input: CreateKnowledge): EntryContent => ({
  scope: input.scope,
  scope_ref: input.scope_ref ?? null,
  category: input.category,
  title: input.title,
  body: input.body
})

/**
 * The organization's knowledge base: entries people write (active at once) and agents propose
 * (pending an admin's approval), their history, hybrid search, and a log of every delivery.
 */
export class Knowledge extends Effect.Service<Knowledge>()("sluice/Knowledge", {
  effect: Effect.gen(function* () {
    const repo = yield* KnowledgeRepo
    const autorun = yield* EvalAutorun
    const search = yield* KnowledgeSearch
    const connections = yield* Connections
    const config = yield* AppConfig

    /** The body fits, and a connection's entry names a connection the organization has. */
    const admissible = (principal: Principal, content: EntryContent) =>
      Effect.gen(function* () {
        const bytes = Buffer.byteLength(content.body)
        if (bytes > KNOWLEDGE_BODY_MAX_BYTES) {
          return yield* new PayloadTooLarge({ message: `body is ${bytes} bytes; an entry holds at most ${KNOWLEDGE_BODY_MAX_BYTES}` })
        }
        if (content.scope === "connection") yield* connections.get(principal, content.scope_ref!)
      })

    const found = (principal: Principal, id: string) =>
      repo.find(principal.orgId, id).pipe(
        Effect.flatMap((entry) => (entry === null ? Effect.fail(notFound(id)) : Effect.succeed(entry)))
      )

    /** A person's entry: active at once, approved by its author. */
    const create = Effect.fn("Knowledge.create")(function* (principal: Principal, input: CreateKnowledge) {
      const content = contentOf(input)
      yield* admissible(principal, content)
      const by = principalLabel(principal)
      const created = yield* repo.insert(principal.orgId, { ...content, id: newId(), status: "active", proposed_by_agent: false, by, approved: true })
      yield* autorun.knowledgeChanged(principal.orgId, created.id)
      return created
    })

    /** A person's new version of an entry: active (an archived one is restored), approved by them. */
    const update = Effect.fn("Knowledge.update")(function* (principal: Principal, id: string, input: CreateKnowledge) {
      const content = contentOf(input)
      yield* admissible(principal, content)
      const by = principalLabel(principal)
      const updated = yield* repo.replace(principal.orgId, id, { ...content, status: "active", by, approved: true }, config.knowledgeHistoryVersions)
      return updated ?? (yield* notFound(id))
    })

    /** Archives an entry (nothing is deleted; an overwrite restores it); an archived one stays as it is. */
    const archive = Effect.fn("Knowledge.archive")(function* (principal: Principal, id: string) {
      const entry = yield* found(principal, id)
      if (entry.status === "archived") return { entry, changed: false }
      const archived = yield* repo
        .replace(principal.orgId, id, { status: "archived", by: principalLabel(principal) }, config.knowledgeHistoryVersions)
        // Archiving keeps the entry where it is: no other entry can hold its place.
        .pipe(Effect.catchTag("Conflict", Effect.die))
      return { entry: archived ?? entry, changed: true }
    })

    const approve = Effect.fn("Knowledge.approve")(function* (principal: Principal, id: string) {
      const entry = yield* found(principal, id)
      if (entry.status !== "pending") return yield* new Conflict({ message: `The entry is ${entry.status}, not pending: only a pending entry is approved` })
      const approved = yield* repo.replace(principal.orgId, id, { status: "active", by: principalLabel(principal), approved: true }, config.knowledgeHistoryVersions)
      if (approved === null) return yield* notFound(id)
      yield* autorun.knowledgeChanged(principal.orgId, id)
      return approved
    })

    const pendingLimits = { entries: config.knowledgePendingMax, bytes: config.knowledgePendingMaxMb * 1024 * 1024 }
    /** A write of a pending proposal, refused when the organization's proposals waiting for review would pass their limits. */
    const withinPending = <A, E, R>(principal: Principal, added: { readonly entries: number; readonly bytes: number }, write: Effect.Effect<A, E, R>) =>
      Effect.flatMap(repo.withinPendingLimits(principal.orgId, added, pendingLimits, write), (outcome) =>
        "written" in outcome
          ? Effect.succeed(outcome.written)
          : Effect.fail(
              new Conflict({
                message:
                  outcome.full === "entries"
                    ? `The organization has ${outcome.held.entries} proposals waiting for review, the most it holds (SP_KNOWLEDGE_PENDING_MAX): an admin approves or archives some first`
                    : `The organization's proposals waiting for review hold ${Math.round(outcome.held.bytes / 1024)} KiB; this one would take them past ${config.knowledgePendingMaxMb} MiB (SP_KNOWLEDGE_PENDING_MAX_MB): an admin approves or archives some first`
              })
            )
      )

    /**
     * An agent's entry, or its new version of the entry at the same place (`overwrite`): pending an
     * admin's approval, unless an MCP client's proposals are active by the self-hosted setting. An
     * archived entry stays archived.
     */
    const propose = Effect.fn("Knowledge.propose")(function* (principal: Principal, input: CreateKnowledge, options: { readonly overwrite: boolean; readonly proposer: Proposer }) {
      const content = contentOf(input)
      yield* admissible(principal, content)
      const by = principalLabel(principal)
      const trusted = options.proposer === "mcp" && config.selfHosted && config.knowledgeProposals === "active"
      const existing = yield* repo.findAt(principal.orgId, content)
      if (existing !== null && !options.overwrite) return { status: "rejected_duplicate", entry: existing } as const
      // Approved or archived knowledge is changed by people (or a trusted client): a proposal never takes it out of service or buries its text.
      if (existing !== null && existing.status !== "pending" && !trusted) return { status: "rejected_approved", entry: existing } as const
      const bytes = Buffer.byteLength(content.body)
      if (existing !== null) {
        const status = existing.status === "archived" ? "archived" : trusted ? "active" : "pending"
        const replaced = repo.replace(principal.orgId, existing.id, { ...content, status, by, approved: status === "active" }, config.knowledgeHistoryVersions)
        const updated =
          status === "pending" ? yield* withinPending(principal, { entries: 0, bytes: bytes - existing.bytes }, replaced) : yield* replaced
        return { status: "updated", entry: updated ?? existing } as const
      }
      const inserted = repo.insert(principal.orgId, { ...content, id: newId(), status: trusted ? "active" : "pending", proposed_by_agent: true, by, approved: trusted })
      const created = trusted ? yield* inserted : yield* withinPending(principal, { entries: 1, bytes }, inserted)
      // Pending proposals never autorun an evaluation; a trusted client's, live at once, does.
      if (trusted) yield* autorun.knowledgeChanged(principal.orgId, created.id)
      return { status: "created", entry: created } as const
    })

    /** One entry, counted as viewed. */
    const get = Effect.fn("Knowledge.get")(function* (principal: Principal, id: string) {
      const [entry] = yield* repo.read(principal.orgId, [id])
      return entry === undefined ? yield* notFound(id) : seenBy(principal, entry)
    })

    /** Entries by id, in the order asked, each counted as viewed; those missing are left out. */
    const read = (principal: Principal, ids: ReadonlyArray<string>) =>
      Effect.map(repo.read(principal.orgId, ids), (entries) => entries.map((entry) => seenBy(principal, entry)))

    /** What a search delivered, rank by rank, as the retrieval log keeps it. */
    const retrievalsOf = (principal: Principal, source: RetrievalSource, query: string | null, hits: ReadonlyArray<KnowledgeHit>): ReadonlyArray<RetrievalRow> =>
      hits.map((hit, index) => ({ entry_id: hit.id, source, query, rank: index + 1, score: hit.score, principal: principalLabel(principal), key_id: principal.keyId }))

    /** The entries that best answer `query` (active ones unless the filter asks for another status), best first, each delivery logged. */
    const find = Effect.fn("Knowledge.find")(function* (principal: Principal, query: string, filter: EntryFilter, limit: number, source: RetrievalSource) {
      const hits = yield* search.search(principal.orgId, query, { ...filter, status: filter.status ?? "active" }, limit)
      // The hits still there, in rank order: an entry archived since the search is neither listed nor logged.
      const present = (found: ReadonlyArray<{ readonly id: string }>) => hits.filter((hit) => found.some((item) => item.id === hit.id))
      const found = yield* repo.deliver(
        principal.orgId,
        hits.map((hit) => hit.id),
        (items) => retrievalsOf(principal, source, query, present(items))
      )
      return present(found).map((hit): KnowledgeListItem => ({ ...found.find((item) => item.id === hit.id)!, score: hit.score }))
    })

    /** The entries overlaid for the principal (an evaluation's doc_ids) that are still proposals: served to it as if approved. */
    const overlaidProposals = (principal: Principal) =>
      principal.knowledgeOverlay === undefined
        ? Effect.succeed([])
        : Effect.map(repo.entries(principal.orgId, principal.knowledgeOverlay), (entries) => entries.filter((entry) => entry.status === "pending"))

    /** The organization's approved context (org scope; with the principal's overlaid proposals first), most recently updated first; not yet counted as delivered. */
    const baseline = Effect.fn("Knowledge.baseline")(function* (principal: Principal, limit: number) {
      const overlaid = (yield* overlaidProposals(principal)).filter((entry) => entry.scope === "org" && entry.category === "context")
      const listed = yield* repo.page(principal.orgId, { scope: "org", category: "context", status: "active" }, null, limit)
      const active = yield* repo.entries(
        principal.orgId,
        listed.map((entry) => entry.id)
      )
      return [...overlaid, ...active].slice(0, limit)
    })

    /** The active entries (and the principal's overlaid proposals) that best answer `query`, whole, best first, with their scores; not yet counted as delivered. */
    const rank = Effect.fn("Knowledge.rank")(function* (principal: Principal, query: string, limit: number) {
      const overlay = new Set((yield* overlaidProposals(principal)).map((entry) => entry.id))
      const proposals = overlay.size === 0 ? [] : (yield* search.search(principal.orgId, query, { status: "pending" }, limit)).filter((hit) => overlay.has(hit.id))
      const hits = [...(yield* search.search(principal.orgId, query, { status: "active" }, limit)), ...proposals].sort((a, b) => b.score - a.score).slice(0, limit)
      const entries = yield* repo.entries(
        principal.orgId,
        hits.map((hit) => hit.id)
      )
      return entries.map((entry) => ({ entry, score: hits.find((hit) => hit.id === entry.id)?.score ?? 0 }))
    })

    /** Entries handed over whole (for `query`, or as the baseline): counted as viewed and logged as retrievals, rank by rank. */
    const handedOver = (principal: Principal, source: RetrievalSource, query: string | null, hits: ReadonlyArray<KnowledgeHit>) =>
      repo.delivered(principal.orgId, retrievalsOf(principal, source, query, hits))

    const list = Effect.fn("Knowledge.list")(function* (principal: Principal, params: KnowledgeListParams) {
      const filter: EntryFilter = { scope: params.scope, scope_ref: params.scope_ref, category: params.category, status: params.status }
      if (params.q !== undefined) {
        if (params.cursor !== undefined) return yield* new InvalidRequest({ message: "a search (q) is one ranked page: it takes limit, not cursor" })
        // What matches a search says what an entry holds: proposals' text is for callers who may read rows.
        if (params.status !== undefined && params.status !== "active" && !mayReadRows(principal)) {
          return yield* new InsufficientScope({ message: "Searching proposals and archived entries needs the query scope: an agent's unapproved text can quote rows", required_scope: "query" })
        }
        return { items: (yield* find(principal, params.q, filter, params.limit ?? DEFAULT_SEARCH_LIMIT, "rest")).map((item) => seenBy(principal, item)), next_cursor: null }
      }
      const limit = params.limit ?? DEFAULT_LIMIT
      const before = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, TimeAndIdCursor)
      const rows = yield* repo.page(principal.orgId, filter, before, limit + 1)
      return pageOf(
        rows.map((row): KnowledgeListItem => seenBy(principal, { ...row, score: null })),
        limit,
        (last) => [last.updated_at.toISOString(), last.id]
      )
    })

    const edits = Effect.fn("Knowledge.edits")(function* (principal: Principal, id: string) {
      yield* found(principal, id)
      return { items: (yield* repo.edits(principal.orgId, id)).map((edit) => seenBy(principal, edit)) }
    })

    const retrievals = (principal: Principal, params: RetrievalParams) =>
      Effect.map(repo.retrievals(principal.orgId, params.since_days ?? DEFAULT_SINCE_DAYS, params.entry_id, params.limit ?? 200), (items) => ({ items }))

    const usage = (principal: Principal, sinceDays: number | undefined) =>
      Effect.map(repo.usage(principal.orgId, sinceDays ?? DEFAULT_SINCE_DAYS), (items) => ({ items }))

    return { create, update, archive, approve, propose, get, read, find, baseline, rank, handedOver, list, edits, retrievals, usage } as const
  }),
  dependencies: [KnowledgeRepo.Default, KnowledgeSearch.Default, Connections.Default, EvalAutorun.Default]
}) {}
