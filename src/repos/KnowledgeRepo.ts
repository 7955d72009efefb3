import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { OrgId } from "../domain/Ids"
import { KnowledgeCategory, KnowledgeEdit, KnowledgeEntry, KnowledgeRetrieval, KnowledgeScope, KnowledgeStatus, KnowledgeUsage } from "../domain/Knowledge"
import { conflictOnDuplicate, storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const ENTRY = `id, scope, scope_ref, category, title, body, status, proposed_by_agent, bytes, view_count, version,
  created_by, updated_by, approved_by, approved_at, created_at, updated_at`
const SNIPPET_CHARS = 240
const ITEM = ENTRY.replace("body, ", `left(body, ${SNIPPET_CHARS}) as snippet, `)

const EntryRow = Schema.Struct({
  ...KnowledgeEntry.omit("withheld").fields,
  approved_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})

const ListItemRow = Schema.Struct({ ...EntryRow.omit("body").fields, snippet: Schema.String })
type ListItemRow = typeof ListItemRow.Type

const EditRow = Schema.Struct({ ...KnowledgeEdit.omit("withheld").fields, edited_at: Schema.DateFromSelf, replaced_at: Schema.DateFromSelf })

const RetrievalLogRow = Schema.Struct({ ...KnowledgeRetrieval.fields, retrieved_at: Schema.DateFromSelf })

// Counts arrive as text (bigint).
const UsageRow = Schema.Struct({
  ...KnowledgeUsage.fields,
  retrievals: Schema.NumberFromString,
  keys: Schema.NumberFromString,
  last_retrieved_at: Schema.NullOr(Schema.DateFromSelf)
})

/** What an entry says, as written: a new entry or a new version of one. */
const EntryContent = Schema.Struct({
  scope: KnowledgeScope,
  scope_ref: Schema.NullOr(Schema.String),
  category: KnowledgeCategory,
  title: Schema.String,
  body: Schema.String
})
export type EntryContent = typeof EntryContent.Type

const EntryFilter = Schema.Struct({
  scope: Schema.optional(KnowledgeScope),
  scope_ref: Schema.optional(Schema.String),
  category: Schema.optional(KnowledgeCategory),
  status: Schema.optional(KnowledgeStatus)
})
export type EntryFilter = typeof EntryFilter.Type

/** One delivery of an entry, for the retrieval log. */
const RetrievalRow = Schema.Struct({
  entry_id: Schema.String,
  source: Schema.String,
  query: Schema.NullOr(Schema.String),
  rank: Schema.Number,
  score: Schema.Number,
  principal: Schema.String,
  key_id: Schema.NullOr(Schema.String)
})
export type RetrievalRow = typeof RetrievalRow.Type

/** An entry as search ranks it: its text, and what a filter looks at. */
const SearchableEntry = Schema.Struct({ ...EntryContent.fields, id: Schema.String, status: KnowledgeStatus })
export type SearchableEntry = typeof SearchableEntry.Type

const NewEntry = Schema.Struct({
  ...EntryContent.fields,
  id: Schema.String,
  status: KnowledgeStatus,
  proposed_by_agent: Schema.Boolean,
  by: Schema.String,
  approved: Schema.Boolean
})

const EntryChange = Schema.Struct({
  scope: Schema.optional(KnowledgeScope),
  scope_ref: Schema.optional(Schema.NullOr(Schema.String)),
  category: Schema.optional(KnowledgeCategory),
  title: Schema.optional(Schema.String),
  body: Schema.optional(Schema.String),
  status: KnowledgeStatus,
  by: Schema.String,
  approved: Schema.optional(Schema.Boolean)
})

const PendingHeld = Schema.Struct({ entries: Schema.Number, bytes: Schema.Number })

const ById = Schema.Struct({ orgId: OrgId, id: Schema.String })
const ByIds = Schema.Struct({ orgId: OrgId, ids: Schema.Array(Schema.String) })

/** Where an entry is, as a refusal names it. */
const placeTaken = (entry: { readonly scope: string; readonly scope_ref: string | null; readonly category: string; readonly title: string }) =>
  `An entry titled ${entry.title} already exists in ${entry.scope}${entry.scope_ref === null ? "" : ` ${entry.scope_ref}`} ${entry.category}`

/** Rows of `ids`, in the order asked. */
const inOrderOf = <Row extends { readonly id: string }>(ids: ReadonlyArray<string>) => (rows: ReadonlyArray<Row>) => ids.flatMap((id) => rows.filter((row) => row.id === id))

/** Knowledge entries, their earlier versions and their retrievals, per org. */
export class KnowledgeRepo extends Effect.Service<KnowledgeRepo>()("sluice/KnowledgeRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("knowledge base")

    const filtered = (orgId: string, filter: typeof EntryFilter.Encoded) =>
      sql.and([
        sql`org_id = ${orgId}`,
        ...(filter.scope === undefined ? [] : [sql`scope = ${filter.scope}`]),
        ...(filter.scope_ref === undefined ? [] : [sql`scope_ref = ${filter.scope_ref}`]),
        ...(filter.category === undefined ? [] : [sql`category = ${filter.category}`]),
        // Archived entries only when asked for.
        filter.status === undefined ? sql`status <> 'archived'` : sql`status = ${filter.status}`
      ])

    const insertEntry = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, row: NewEntry }),
      Result: EntryRow,
      execute: ({ orgId, row }) =>
        sql`insert into knowledge_entries ${sql.insert({
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
        })} returning ${sql.unsafe(ENTRY)}`
    })
    const approvedAtCreation = SqlSchema.single({
      Request: Schema.String,
      Result: EntryRow,
      execute: (id) => sql`update knowledge_entries set approved_at = created_at where id = ${id} returning ${sql.unsafe(ENTRY)}`
    })
    const insert = Effect.fn("KnowledgeRepo.insert")(
      (orgId: OrgId, row: typeof NewEntry.Type) =>
        insertEntry({ orgId, row }).pipe(
          Effect.flatMap((inserted) => (row.approved ? approvedAtCreation(row.id) : Effect.succeed(inserted))),
          conflictOnDuplicate(placeTaken(row)),
          withOrg(orgId)
        ),
      failures
    )

    const pendingOf = SqlSchema.single({
      Request: OrgId,
      Result: PendingHeld,
      execute: (orgId) =>
        sql`select count(*)::int as entries, coalesce(sum(bytes), 0)::float8 as bytes
          from knowledge_entries where org_id = ${orgId} and status = 'pending'`
    })
    /**
     * Runs `write`, which adds `added` to the organization's pending proposals, only while they stay
     * within `limits`; proposals of one organization are written one at a time (a transaction lock),
     * so writers at once cannot pass them together. Otherwise says which limit it would pass.
     */
    // A span rather than Effect.fn: Effect.fn would lose the type of what `write` returns.
    const withinPendingLimits = <A, E, R>(
      orgId: OrgId,
      added: { readonly entries: number; readonly bytes: number },
      limits: { readonly entries: number; readonly bytes: number },
      write: Effect.Effect<A, E, R>
    ) =>
      Effect.gen(function* () {
        yield* sql`select pg_advisory_xact_lock(hashtext(${`sluice:knowledge-pending:${orgId}`}))`
        const held = yield* pendingOf(orgId)
        if (held.entries + added.entries > limits.entries) return { full: "entries", held } as const
        if (held.bytes + added.bytes > limits.bytes) return { full: "bytes", held } as const
        return { written: yield* write } as const
      }).pipe(withOrg(orgId), failures, Effect.withSpan("KnowledgeRepo.withinPendingLimits"))

    const entryById = SqlSchema.findOne({
      Request: ById,
      Result: EntryRow,
      execute: ({ orgId, id }) => sql`select ${sql.unsafe(ENTRY)} from knowledge_entries where org_id = ${orgId} and id = ${id}`
    })
    const find = Effect.fn("KnowledgeRepo.find")((orgId: OrgId, id: string) => entryById({ orgId, id }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const entryAt = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, place: EntryContent.omit("body") }),
      Result: EntryRow,
      execute: ({ orgId, place }) =>
        sql`select ${sql.unsafe(ENTRY)} from knowledge_entries where org_id = ${orgId} and scope = ${place.scope}
          and coalesce(scope_ref, '') = ${place.scope_ref ?? ""} and category = ${place.category} and title = ${place.title}`
    })
    const findAt = Effect.fn("KnowledgeRepo.findAt")(
      (orgId: OrgId, place: Omit<EntryContent, "body">) => entryAt({ orgId, place }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const entriesIn = SqlSchema.findAll({
      Request: ByIds,
      Result: EntryRow,
      execute: ({ orgId, ids }) => sql`select ${sql.unsafe(ENTRY)} from knowledge_entries where org_id = ${orgId} and ${sql.in("id", ids)}`
    })
    /** Entries by id, in the order asked, not counted as viewed. */
    const entries = Effect.fn("KnowledgeRepo.entries")(
      (orgId: OrgId, ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.succeed([]) : entriesIn({ orgId, ids }).pipe(Effect.map(inOrderOf(ids)), withOrg(orgId)),
      failures
    )

    const logRetrievals = SqlSchema.void({
      Request: Schema.Struct({ orgId: OrgId, rows: Schema.Array(RetrievalRow) }),
      execute: ({ orgId, rows }) => sql`insert into knowledge_retrievals ${sql.insert(rows.map((row) => ({ ...row, org_id: orgId })))}`
    })
    const logged = (orgId: OrgId, rows: ReadonlyArray<RetrievalRow>) => (rows.length === 0 ? Effect.void : logRetrievals({ orgId, rows }))

    const countViews = SqlSchema.void({
      Request: ByIds,
      execute: ({ orgId, ids }) => sql`update knowledge_entries set view_count = view_count + 1 where org_id = ${orgId} and ${sql.in("id", ids)}`
    })
    /** Entries delivered whole: counted as viewed, their delivery logged. */
    const delivered = Effect.fn("KnowledgeRepo.delivered")(
      (orgId: OrgId, rows: ReadonlyArray<RetrievalRow>) =>
        rows.length === 0
          ? Effect.void
          : Effect.zipRight(countViews({ orgId, ids: rows.map((row) => row.entry_id) }), logged(orgId, rows)).pipe(withOrg(orgId)),
      failures
    )

    const viewEntries = SqlSchema.findAll({
      Request: ByIds,
      Result: EntryRow,
      execute: ({ orgId, ids }) =>
        sql`update knowledge_entries set view_count = view_count + 1 where org_id = ${orgId} and ${sql.in("id", ids)} returning ${sql.unsafe(ENTRY)}`
    })
    /** Entries by id, in the order asked, counting each as viewed. */
    const read = Effect.fn("KnowledgeRepo.read")(
      (orgId: OrgId, ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.succeed([]) : viewEntries({ orgId, ids }).pipe(Effect.map(inOrderOf(ids)), withOrg(orgId)),
      failures
    )

    const lockedEntry = SqlSchema.findOne({
      Request: ById,
      Result: EntryRow,
      execute: ({ orgId, id }) => sql`select ${sql.unsafe(ENTRY)} from knowledge_entries where org_id = ${orgId} and id = ${id} for update`
    })
    const keepEdit = SqlSchema.void({
      Request: Schema.Struct({ orgId: OrgId, current: EntryRow, replacedBy: Schema.String, keep: Schema.Number }),
      execute: ({ orgId, current, replacedBy, keep }) =>
        Effect.zipRight(
          sql`insert into knowledge_edits ${sql.insert({
            org_id: orgId,
            entry_id: current.id,
            version: current.version,
            scope: current.scope,
            scope_ref: current.scope_ref,
            category: current.category,
            title: current.title,
            body: current.body,
            status: current.status,
            edited_by: current.updated_by,
            edited_at: current.updated_at,
            replaced_by: replacedBy
          })}`,
          sql`delete from knowledge_edits where entry_id = ${current.id} and version <= ${current.version - keep}`
        )
    })
    const updateEntry = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, id: Schema.String, next: EntryContent, status: KnowledgeStatus, version: Schema.Number, by: Schema.String, approved: Schema.Boolean }),
      Result: EntryRow,
      execute: ({ orgId, id, next, status, version, by, approved }) =>
        sql`update knowledge_entries set ${sql.update({ ...next, bytes: Buffer.byteLength(next.body), status, version, updated_by: by })},
            updated_at = date_trunc('milliseconds', now())
            ${approved ? sql`, approved_by = ${by}, approved_at = date_trunc('milliseconds', now())` : sql``}
          where org_id = ${orgId} and id = ${id} returning ${sql.unsafe(ENTRY)}`
    })
    /**
     * Replaces an entry's content (and status), keeping the version it replaces in its history and
     * at most `keep` earlier versions; null when the entry is gone.
     */
    const replace = Effect.fn("KnowledgeRepo.replace")(
      function* (orgId: OrgId, id: string, change: typeof EntryChange.Type, keep: number) {
        const found = yield* lockedEntry({ orgId, id })
        if (Option.isNone(found)) return null
        const current = found.value
        yield* keepEdit({ orgId, current, replacedBy: change.by, keep })
        const next: EntryContent = {
          scope: change.scope ?? current.scope,
          scope_ref: change.scope === undefined ? current.scope_ref : (change.scope_ref ?? null),
          category: change.category ?? current.category,
          title: change.title ?? current.title,
          body: change.body ?? current.body
        }
        return yield* updateEntry({ orgId, id, next, status: change.status, version: current.version + 1, by: change.by, approved: change.approved === true }).pipe(
          conflictOnDuplicate(placeTaken(next))
        )
      },
      (effect, orgId) => withOrg(orgId)(effect),
      failures
    )

    const pageOfEntries = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, filter: EntryFilter, before: Schema.NullOr(Schema.Tuple(Schema.String, Schema.String)), limit: Schema.Number }),
      Result: ListItemRow,
      execute: ({ orgId, filter, before, limit }) =>
        sql`select ${sql.unsafe(ITEM)} from knowledge_entries where ${filtered(orgId, filter)}
          ${before === null ? sql`` : sql`and (updated_at, id) < (${before[0]}::timestamptz, ${before[1]})`}
          order by updated_at desc, id desc limit ${limit}`
    })
    /** A page of entries, most recently updated first, after the (updated_at, id) of the last one seen. */
    const page = Effect.fn("KnowledgeRepo.page")(
      (orgId: OrgId, filter: EntryFilter, before: readonly [string, string] | null, limit: number) => pageOfEntries({ orgId, filter, before, limit }).pipe(withOrg(orgId)),
      failures
    )

    const generationOf = SqlSchema.findOne({
      Request: OrgId,
      Result: Schema.Struct({ generation: Schema.String }),
      execute: (orgId) => sql`select generation::text from knowledge_generations where org_id = ${orgId}`
    })
    const fullTextRanking = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, filter: EntryFilter, query: Schema.String, limit: Schema.Number }),
      Result: Schema.Struct({ id: Schema.String, rank: Schema.Number }),
      execute: ({ orgId, filter, query, limit }) =>
        sql`select id, ts_rank_cd(search, q) as rank
          from knowledge_entries, websearch_to_tsquery('english', ${query}) q
          where ${filtered(orgId, filter)} and search @@ q order by rank desc, id limit ${limit}`
    })
    const activeEntries = SqlSchema.findAll({
      Request: OrgId,
      Result: SearchableEntry,
      execute: (orgId) =>
        sql`select id, scope, scope_ref, category, title, body, status from knowledge_entries
          where org_id = ${orgId} and status = 'active' order by updated_at desc, id desc`
    })
    /**
     * What a search ranks from, in one transaction: PostgreSQL's full-text ranking of the entries a
     * filter allows (best first), what tells whether the org's active entries changed since `known`,
     * and then, if they did, every active entry, to index in memory.
     */
    const rankingInputs = Effect.fn("KnowledgeRepo.rankingInputs")(
      function* (orgId: OrgId, filter: EntryFilter, query: string, limit: number, known: string | undefined) {
        const generation = Option.match(yield* generationOf(orgId), { onNone: () => "", onSome: (row) => row.generation })
        const fullText = yield* fullTextRanking({ orgId, filter, query, limit })
        const entries = generation === known ? null : yield* activeEntries(orgId)
        return { generation, fullText, entries }
      },
      (effect, orgId) => withOrg(orgId)(effect),
      failures
    )

    const itemsIn = SqlSchema.findAll({
      Request: ByIds,
      Result: ListItemRow,
      execute: ({ orgId, ids }) => sql`select ${sql.unsafe(ITEM)} from knowledge_entries where org_id = ${orgId} and ${sql.in("id", ids)}`
    })
    /** The entries a search ranked, as listed, with their delivery logged, in one transaction; those gone since are left out. */
    const deliver = Effect.fn("KnowledgeRepo.deliver")(
      (orgId: OrgId, ids: ReadonlyArray<string>, retrieval: (found: ReadonlyArray<ListItemRow>) => ReadonlyArray<RetrievalRow>) =>
        ids.length === 0
          ? Effect.succeed([])
          : itemsIn({ orgId, ids }).pipe(
              Effect.tap((found) => logged(orgId, retrieval(found))),
              withOrg(orgId)
            ),
      failures
    )

    const editsOf = SqlSchema.findAll({
      Request: ById,
      Result: EditRow,
      execute: ({ orgId, id }) =>
        sql`select version, scope, scope_ref, category, title, body, status, edited_by, edited_at, replaced_by, replaced_at
          from knowledge_edits where org_id = ${orgId} and entry_id = ${id} order by version desc`
    })
    const edits = Effect.fn("KnowledgeRepo.edits")((orgId: OrgId, id: string) => editsOf({ orgId, id }).pipe(withOrg(orgId)), failures)

    const retrievalLog = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, sinceDays: Schema.Number, entryId: Schema.optional(Schema.String), limit: Schema.Number }),
      Result: RetrievalLogRow,
      execute: ({ orgId, sinceDays, entryId, limit }) =>
        sql`select r.entry_id, e.title, r.source, r.query, r.rank, r.score, r.principal, r.key_id, r.retrieved_at
          from knowledge_retrievals r join knowledge_entries e on e.id = r.entry_id
          where r.org_id = ${orgId} and r.retrieved_at > now() - make_interval(days => ${sinceDays})
          ${entryId === undefined ? sql`` : sql`and r.entry_id = ${entryId}`}
          order by r.retrieved_at desc, r.id desc limit ${limit}`
    })
    const retrievals = Effect.fn("KnowledgeRepo.retrievals")(
      (orgId: OrgId, sinceDays: number, entryId: string | undefined, limit: number) => retrievalLog({ orgId, sinceDays, entryId, limit }).pipe(withOrg(orgId)),
      failures
    )

    const usageSince = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, sinceDays: Schema.Number }),
      Result: UsageRow,
      execute: ({ orgId, sinceDays }) =>
        sql`select e.id as entry_id, e.title, e.scope, e.scope_ref, e.category, e.status, e.view_count,
            count(r.id) as retrievals, count(distinct coalesce(r.key_id, r.principal)) as keys, max(r.retrieved_at) as last_retrieved_at
          from knowledge_entries e left join knowledge_retrievals r on r.entry_id = e.id and r.retrieved_at > now() - make_interval(days => ${sinceDays})
          where e.org_id = ${orgId} and e.status <> 'archived'
          group by e.id order by count(r.id) desc, e.view_count desc, e.id`
    })
    const usage = Effect.fn("KnowledgeRepo.usage")((orgId: OrgId, sinceDays: number) => usageSince({ orgId, sinceDays }).pipe(withOrg(orgId)), failures)

    const pruneBatch = SqlSchema.single({
      Request: Schema.Struct({ before: Schema.DateFromSelf, batch: Schema.Number }),
      Result: Schema.Struct({ pruned: Schema.Number }),
      execute: ({ before, batch }) =>
        sql`with gone as (delete from knowledge_retrievals where id in (select id from knowledge_retrievals where retrieved_at < ${before} limit ${batch}) returning 1)
          select count(*)::int as pruned from gone`
    })
    /** Retention: deletes up to `batch` retrieval events (of every org) from before `before`; returns how many went. */
    const pruneRetrievals = Effect.fn("KnowledgeRepo.pruneRetrievals")(
      (before: Date, batch = 10_000) => pruneBatch({ before, batch }).pipe(Effect.map((row) => row.pruned)),
      failures
    )

    const liveVersionsOf = SqlSchema.findAll({
      Request: OrgId,
      Result: Schema.Struct({ id: Schema.String, version: Schema.Int }),
      execute: (orgId) => sql`select id, version from knowledge_entries where org_id = ${orgId} and status = 'active' order by id`
    })
    /** The live knowledge base as `<id>@<version>`: what an agent may be given now. */
    const liveVersions = Effect.fn("KnowledgeRepo.liveVersions")(
      (orgId: OrgId) => liveVersionsOf(orgId).pipe(Effect.map((rows) => rows.map((row) => `${row.id}@${row.version}`)), withOrg(orgId)),
      failures
    )

    return { insert, withinPendingLimits, liveVersions, find, findAt, entries, delivered, read, replace, page, rankingInputs, deliver, edits, retrievals, usage, pruneRetrievals } as const
  })
}) {}
