import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import type {
  KnowledgeCategory,
  KnowledgeEdit,
  KnowledgeEntry,
  KnowledgeListItem,
  KnowledgeRetrieval,
  KnowledgeScope,
  KnowledgeStatus,
  KnowledgeUsage
} from "../domain/Knowledge"
import { tenantScope } from "./Tenant"

const ENTRY = `id, scope, scope_ref, category, title, body, status, proposed_by_agent, bytes, view_count, version,
  created_by, updated_by, approved_by, approved_at, created_at, updated_at`
const SNIPPET_CHARS = 240
const ITEM = ENTRY.replace("body, ", `left(body, ${SNIPPET_CHARS}) as snippet, `)

/** What an entry says, as written: a new entry or a new version of one. */
export interface EntryContent {
  readonly scope: KnowledgeScope
  readonly scope_ref: string | null
  readonly category: KnowledgeCategory
  readonly title: string
  readonly body: string
}

export interface EntryFilter {
  readonly scope?: KnowledgeScope | undefined
  readonly scope_ref?: string | undefined
  readonly category?: KnowledgeCategory | undefined
  readonly status?: KnowledgeStatus | undefined
}

/** One delivery of an entry, for the retrieval log. */
export interface RetrievalRow {
  readonly entry_id: string
  readonly source: string
  readonly query: string | null
  readonly rank: number
  readonly score: number
  readonly principal: string
  readonly key_id: string | null
}

/** An entry as search ranks it: its text, and what a filter looks at. */
export interface SearchableEntry extends EntryContent {
  readonly id: string
  readonly status: KnowledgeStatus
}

/** Knowledge entries, their earlier versions and their retrievals, per org. */
export class KnowledgeRepo extends Effect.Service<KnowledgeRepo>()("sluice/KnowledgeRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)

    const filtered = (orgId: OrgId, filter: EntryFilter) =>
      sql.and([
        sql`org_id = ${orgId}`,
        ...(filter.scope === undefined ? [] : [sql`scope = ${filter.scope}`]),
        ...(filter.scope_ref === undefined ? [] : [sql`scope_ref = ${filter.scope_ref}`]),
        ...(filter.category === undefined ? [] : [sql`category = ${filter.category}`]),
        // Archived entries only when asked for.
        filter.status === undefined ? sql`status <> 'archived'` : sql`status = ${filter.status}`
      ])

    const insert = (orgId: OrgId, row: EntryContent & { id: string; status: KnowledgeStatus; proposed_by_agent: boolean; by: string; approved: boolean }) =>
      sql<KnowledgeEntry>`insert into knowledge_entries ${sql.insert({
        id: row.id,
        org_id: orgId,
        scope: row.scope,
        scope_ref: row.scope_ref,
        category: row.category,
        title: row.title,
        body: row.body,
        status: row.status,
        proposed_by_agent: row.proposed_by_agent,
        bytes: Buffer.byteLength(row.body),
        created_by: row.by,
        updated_by: row.by,
        approved_by: row.approved ? row.by : null
      })} returning ${sql.unsafe(ENTRY)}`.pipe(
        Effect.flatMap((rows) =>
          row.approved
            ? Effect.map(sql<KnowledgeEntry>`update knowledge_entries set approved_at = created_at where id = ${row.id} returning ${sql.unsafe(ENTRY)}`, (approved) => approved[0]!)
            : Effect.succeed(rows[0]!)
        ),
        withOrg(orgId)
      )

    /**
     * Runs `write`, which adds `added` to the organization's pending proposals, only while they stay
     * within `limits`; proposals of one organization are written one at a time (a transaction lock),
     * so writers at once cannot pass them together. Otherwise says which limit it would pass.
     */
    const withinPendingLimits = <A, E, R>(
      orgId: OrgId,
      added: { readonly entries: number; readonly bytes: number },
      limits: { readonly entries: number; readonly bytes: number },
      write: Effect.Effect<A, E, R>
    ) =>
      Effect.gen(function* () {
        yield* sql`select pg_advisory_xact_lock(hashtext(${`sluice:knowledge-pending:${orgId}`}))`
        const [held] = yield* sql<{ entries: number; bytes: number }>`select count(*)::int as entries, coalesce(sum(bytes), 0)::float8 as bytes
          from knowledge_entries where org_id = ${orgId} and status = 'pending'`
        if (held!.entries + added.entries > limits.entries) return { full: "entries", held: held! } as const
        if (held!.bytes + added.bytes > limits.bytes) return { full: "bytes", held: held! } as const
        return { written: yield* write } as const
      }).pipe(withOrg(orgId))

    const find = (orgId: OrgId, id: string) =>
      sql<KnowledgeEntry>`select ${sql.unsafe(ENTRY)} from knowledge_entries where org_id = ${orgId} and id = ${id}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    const findAt = (orgId: OrgId, place: Omit<EntryContent, "body">) =>
      sql<KnowledgeEntry>`select ${sql.unsafe(ENTRY)} from knowledge_entries where org_id = ${orgId} and scope = ${place.scope}
        and coalesce(scope_ref, '') = ${place.scope_ref ?? ""} and category = ${place.category} and title = ${place.title}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    /** Entries by id, in the order asked, not counted as viewed. */
    const entries = (orgId: OrgId, ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([])
        : sql<KnowledgeEntry>`select ${sql.unsafe(ENTRY)} from knowledge_entries where org_id = ${orgId} and ${sql.in("id", ids)}`.pipe(
            Effect.map((rows) => ids.flatMap((id) => rows.filter((row) => row.id === id))),
            withOrg(orgId)
          )

    /** Entries delivered whole: counted as viewed, their delivery logged. */
    const delivered = (orgId: OrgId, rows: ReadonlyArray<RetrievalRow>) =>
      rows.length === 0
        ? Effect.void
        : Effect.zipRight(
            sql`update knowledge_entries set view_count = view_count + 1 where org_id = ${orgId} and ${sql.in("id", rows.map((row) => row.entry_id))}`,
            logged(orgId, rows)
          ).pipe(withOrg(orgId))

    /** Entries by id, in the order asked, counting each as viewed. */
    const read = (orgId: OrgId, ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([])
        : sql<KnowledgeEntry>`update knowledge_entries set view_count = view_count + 1 where org_id = ${orgId} and ${sql.in("id", ids)}
            returning ${sql.unsafe(ENTRY)}`.pipe(
            Effect.map((rows) => ids.flatMap((id) => rows.filter((row) => row.id === id))),
            withOrg(orgId)
          )

    /**
     * Replaces an entry's content (and status), keeping the version it replaces in its history and
     * at most `keep` earlier versions; null when the entry is gone.
     */
    const replace = (orgId: OrgId, id: string, change: Partial<EntryContent> & { readonly status: KnowledgeStatus; readonly by: string; readonly approved?: boolean }, keep: number) =>
      Effect.gen(function* () {
        const [current] = yield* sql<KnowledgeEntry>`select ${sql.unsafe(ENTRY)} from knowledge_entries where org_id = ${orgId} and id = ${id} for update`
        if (current === undefined) return null
        yield* sql`insert into knowledge_edits ${sql.insert({
          org_id: orgId,
          entry_id: id,
          version: current.version,
          scope: current.scope,
          scope_ref: current.scope_ref,
          category: current.category,
          title: current.title,
          body: current.body,
          status: current.status,
          edited_by: current.updated_by,
          edited_at: current.updated_at,
          replaced_by: change.by
        })}`
        yield* sql`delete from knowledge_edits where entry_id = ${id} and version <= ${current.version - keep}`
        const body = change.body ?? current.body
        const [updated] = yield* sql<KnowledgeEntry>`update knowledge_entries set ${sql.update({
          scope: change.scope ?? current.scope,
          scope_ref: change.scope === undefined ? current.scope_ref : (change.scope_ref ?? null),
          category: change.category ?? current.category,
          title: change.title ?? current.title,
          body,
          bytes: Buffer.byteLength(body),
          status: change.status,
          version: current.version + 1,
          updated_by: change.by
        })}, updated_at = date_trunc('milliseconds', now())
          ${change.approved === true ? sql`, approved_by = ${change.by}, approved_at = date_trunc('milliseconds', now())` : sql``}
          where org_id = ${orgId} and id = ${id} returning ${sql.unsafe(ENTRY)}`
        return updated ?? null
      }).pipe(withOrg(orgId))

    /** A page of entries, most recently updated first, after the (updated_at, id) of the last one seen. */
    const page = (orgId: OrgId, filter: EntryFilter, before: readonly [string, string] | null, limit: number) =>
      sql<Omit<KnowledgeListItem, "score">>`select ${sql.unsafe(ITEM)} from knowledge_entries where ${filtered(orgId, filter)}
        ${before === null ? sql`` : sql`and (updated_at, id) < (${before[0]}::timestamptz, ${before[1]})`}
        order by updated_at desc, id desc limit ${limit}`.pipe(withOrg(orgId))

    const itemsIn = (orgId: OrgId, ids: ReadonlyArray<string>) =>
      sql<Omit<KnowledgeListItem, "score">>`select ${sql.unsafe(ITEM)} from knowledge_entries where org_id = ${orgId} and ${sql.in("id", ids)}`

    /**
     * What a search ranks from, in one transaction: PostgreSQL's full-text ranking of the entries a
     * filter allows (best first), what tells whether the org's active entries changed since `known`,
     * and then, if they did, every active entry, to index in memory.
     */
    const rankingInputs = (orgId: OrgId, filter: EntryFilter, query: string, limit: number, known: string | undefined) =>
      Effect.gen(function* () {
        const [counted] = yield* sql<{ readonly generation: string }>`select generation::text from knowledge_generations where org_id = ${orgId}`
        const fullText = yield* sql<{ readonly id: string; readonly rank: number }>`select id, ts_rank_cd(search, q) as rank
          from knowledge_entries, websearch_to_tsquery('english', ${query}) q
          where ${filtered(orgId, filter)} and search @@ q order by rank desc, id limit ${limit}`
        const generation = counted?.generation ?? ""
        const entries =
          generation === known
            ? null
            : yield* sql<SearchableEntry>`select id, scope, scope_ref, category, title, body, status from knowledge_entries
                where org_id = ${orgId} and status = 'active' order by updated_at desc, id desc`
        return { generation, fullText, entries }
      }).pipe(withOrg(orgId))

    /** The entries a search ranked, as listed, with their delivery logged, in one transaction; those gone since are left out. */
    const deliver = (orgId: OrgId, ids: ReadonlyArray<string>, retrieval: (found: ReadonlyArray<Omit<KnowledgeListItem, "score">>) => ReadonlyArray<RetrievalRow>) =>
      ids.length === 0
        ? Effect.succeed([])
        : Effect.gen(function* () {
            const found = yield* itemsIn(orgId, ids)
            yield* logged(orgId, retrieval(found))
            return found
          }).pipe(withOrg(orgId))

    const edits = (orgId: OrgId, id: string) =>
      sql<KnowledgeEdit>`select version, scope, scope_ref, category, title, body, status, edited_by, edited_at, replaced_by, replaced_at
        from knowledge_edits where org_id = ${orgId} and entry_id = ${id} order by version desc`.pipe(withOrg(orgId))

    const logged = (orgId: OrgId, rows: ReadonlyArray<RetrievalRow>) =>
      rows.length === 0 ? Effect.void : Effect.asVoid(sql`insert into knowledge_retrievals ${sql.insert(rows.map((row) => ({ ...row, org_id: orgId })))}`)


    const retrievals = (orgId: OrgId, sinceDays: number, entryId: string | undefined, limit: number) =>
      sql<KnowledgeRetrieval>`select r.entry_id, e.title, r.source, r.query, r.rank, r.score, r.principal, r.key_id, r.retrieved_at
        from knowledge_retrievals r join knowledge_entries e on e.id = r.entry_id
        where r.org_id = ${orgId} and r.retrieved_at > now() - make_interval(days => ${sinceDays})
        ${entryId === undefined ? sql`` : sql`and r.entry_id = ${entryId}`}
        order by r.retrieved_at desc, r.id desc limit ${limit}`.pipe(withOrg(orgId))

    const usage = (orgId: OrgId, sinceDays: number) =>
      sql<KnowledgeUsage & { readonly retrievals: string; readonly keys: string }>`select e.id as entry_id, e.title, e.scope, e.scope_ref, e.category, e.status, e.view_count,
          count(r.id) as retrievals, count(distinct coalesce(r.key_id, r.principal)) as keys, max(r.retrieved_at) as last_retrieved_at
        from knowledge_entries e left join knowledge_retrievals r on r.entry_id = e.id and r.retrieved_at > now() - make_interval(days => ${sinceDays})
        where e.org_id = ${orgId} and e.status <> 'archived'
        group by e.id order by count(r.id) desc, e.view_count desc, e.id`.pipe(
        Effect.map((rows) => rows.map((row): KnowledgeUsage => ({ ...row, retrievals: Number(row.retrievals), keys: Number(row.keys) }))),
        withOrg(orgId)
      )

    /** Retention: deletes up to `batch` retrieval events (of every org) from before `before`; returns how many went. */
    const pruneRetrievals = (before: Date, batch = 10_000) =>
      sql`delete from knowledge_retrievals where id in (select id from knowledge_retrievals where retrieved_at < ${before} limit ${batch})`.raw.pipe(
        Effect.map((result) => (result as { rowCount?: number }).rowCount ?? 0)
      )

    return { insert, withinPendingLimits, find, findAt, entries, delivered, read, replace, page, rankingInputs, deliver, edits, retrievals, usage, pruneRetrievals } as const
  })
}) {}
