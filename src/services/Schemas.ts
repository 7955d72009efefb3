import { Deferred, Effect, Either, FiberId, type Scope } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import type { PoolTarget } from "../../layers/connectors/ConnectorPools"
import type { ConnectionInput } from "../domain/Connection"
import { InvalidRequest, type Unavailable } from "../domain/Errors"
import type { DatabaseUnavailable, QueryFailed, QueryTimeout } from "../domain/Query"
import type { OrgId } from "../domain/Ids"
import type { PiiPolicy } from "../domain/Pii"
import type { Principal } from "../domain/Principal"
import { onQualifiedName, type RefreshStatus, type SchemaSnapshot, type TableInfo } from "../domain/SchemaSnapshot"
import { CatalogReader } from "../governance/CatalogReader"
import { withoutPiiStatistics } from "../governance/PiiMasking"
import { maskingCatalog, type MaskingCatalog, NO_MASKING } from "../governance/SourceMasking"
import { ResultCache } from "../governance/ResultCache"
import type { TableReference } from "../governance/sqlguard/Analysis"
import { SqlGuard } from "../governance/sqlguard/SqlGuard"
import { blocksThroughRelations, rulesThroughRelations, viewReads } from "../governance/ViewLineage"
import { DIALECTS } from "../governance/sqlguard/Dialects"
import { qualify, relationKey } from "../governance/sqlguard/Names"
import { isSystemRelation } from "../governance/sqlguard/SystemRelations"
import { NOTHING_REACHED, type ReachedBlocks, tableVisible } from "../governance/TablePolicy"
import { type NoteRow, SchemaNotesRepo } from "../repos/SchemaNotesRepo"
import { SchemaRepo, type SnapshotHeader } from "../repos/SchemaRepo"
import { descendantSet } from "../schema/catalog/CatalogQueries"
import { catalogGap } from "../schema/catalog/Catalogs"
import { type CatalogScan, fingerprintOf } from "../schema/CatalogScan"
import { diffSchemas, visiblePart } from "../schema/SchemaDiff"
import { searchNotes, withNotes } from "../schema/SchemaNotes"
import { SchemaSearch } from "../schema/SchemaSearch"
import { Connections } from "./Connections"

// Catalog reads are metadata, not results: a generous cap, and a scan that would pass it says so.
// Another replica's newer scan is picked up within this.
const RECHECK_MS = 2_000
const CACHE_CAPACITY = 1_000
// After a scan the query path asked for fails, queries do not ask again for this long.
const QUERY_SCAN_EVERY_MS = 60_000
// What a statement reads is confirmed against the catalog when the last confirmation is older than this:
// a DDL change reaches the query path within it, and a busy connection reads its catalog once a second.
const CONFIRMED_FOR_MS = 1_000

type Target = PoolTarget
// Pool targets carry the org as a plain string; every one here came from the org's own lookup.
const orgOf = (target: Target): OrgId => target.orgId as OrgId

/** One connection's snapshot as this replica holds it, with its search index built on first use. */
interface Cached {
  readonly orgId: OrgId
  readonly connectionId: string
  readonly header: SnapshotHeader
  readonly tables: ReadonlyArray<TableInfo>
  checkedAt: number
  /** Descriptions, type fixes and endorsements people added, reloaded with each recheck. */
  notes: ReadonlyArray<NoteRow>
  /** The PII policy with rules derived through this snapshot's views, partitions and children, and the relations that reach a blocked table, for one version of the connection's settings and rules. */
  throughRelations?: { readonly key: string } & RelationPolicy
  /** The snapshot's relations (partitions and children too) by resolved name, and the relations each view's definition reads. */
  relations?: {
    readonly byKey: ReadonlyMap<string, ScannedRelation>
    readonly reads: Map<string, ReadonlyArray<string>>
    /** When the catalog last said each relation is still what the snapshot says. */
    readonly confirmedAt: Map<string, number>
  }
  /** The snapshot's relation names (partitions and children included), lower-cased, for telling a relation it does not list. */
  names?: { readonly qualified: ReadonlySet<string>; readonly bare: ReadonlySet<string> }
  /** The tables with their notes, visible under one version of the connection's settings and notes, worked out once. */
  curated?: {
    readonly key: string
    readonly all: ReadonlyArray<TableInfo>
    readonly tables: ReadonlyArray<TableInfo>
    readonly scanned: ReadonlyArray<TableInfo>
    readonly set: ReadonlySet<TableInfo>
    search?: SchemaSearch
  }
}

/** A snapshot as one caller may see it: tables their connection's policy blocks are left out of everything. */
export interface SchemaView {
  readonly snapshot: SchemaSnapshot
  readonly connection: ConnectionInput
  /** The visible tables. */
  readonly tables: ReadonlyArray<TableInfo>
  /** Whether one of this snapshot's tables is visible (by identity: not for tables read elsewhere). */
  readonly visible: (table: TableInfo) => boolean
  readonly search: () => SchemaSearch
  /** The visible tables as scanned, without notes, for diffs. */
  readonly scanned: ReadonlyArray<TableInfo>
  readonly notes: ReadonlyArray<NoteRow>
}

/** A connection's PII rules and blocked tables as they follow views, partitions and inheritance children, and its relations for masking at the source. */
export interface RelationPolicy {
  readonly pii: PiiPolicy
  readonly reached: ReachedBlocks
  readonly masking: MaskingCatalog
  /** Why no statement may run under this policy now: what it reads changed since the snapshot, which could not be taken again. */
  readonly refusal?: string
}

/** A relation of a snapshot as the catalog's kind and definition tell it from what it is now. */
interface ScannedRelation {
  readonly schema: string
  readonly name: string
  readonly kind: string
  readonly definition: string | null
  /** Its partitions and inheritance children at every level, as `descendantSet` writes them. */
  readonly descendants: string
}

// A table, a partition, a partitioned or a foreign table hold rows alike; a view or a materialized view computes them.
const shapeOf = (kind: string) => (kind === "view" || kind === "materialized_view" ? kind : "table")

/** Changes when any note of the connection does: how many, and the latest write. */
const notesKey = (notes: ReadonlyArray<NoteRow>) => `${notes.length}:${Math.max(0, ...notes.map((n) => n.updated_at.getTime()))}`

const filtersOf = (connection: ConnectionInput) => JSON.stringify([connection.schema_include ?? [], connection.schema_exclude ?? []])

type ScanError = InvalidRequest | Unavailable | QueryFailed | QueryTimeout | DatabaseUnavailable

/**
 * Schema scans, their stored snapshots and this replica's cache of them. A read of a connection
 * never scanned scans it first; refreshes run in the background, one per connection at a time.
 */
export class Schemas extends Effect.Service<Schemas>()("sluice/Schemas", {
  scoped: Effect.gen(function* () {
    const repo = yield* SchemaRepo
    const notesRepo = yield* SchemaNotesRepo
    const connections = yield* Connections
    const catalog = yield* CatalogReader
    const results = yield* ResultCache
    const guard = yield* SqlGuard
    const scope: Scope.Scope = yield* Effect.scope
    const cache = new Map<string, Cached>()
    const counters = { hits: 0, loads: 0, scans: 0 }
    const running = new Map<string, Deferred.Deferred<Cached, ScanError>>()
    const scanFailedAt = new Map<string, number>()
    // A snapshot this young is taken to list every relation: a name it lacks does not exist.
    const freshMillis = (yield* AppConfig).schemaFreshSeconds * 1000

    const remember = (entry: Cached) => {
      cache.delete(entry.connectionId)
      cache.set(entry.connectionId, entry)
      if (cache.size > CACHE_CAPACITY) cache.delete(cache.keys().next().value!)
      return entry
    }

    /** A stored version's tables, from this replica's cache when it holds that version. */
    const tablesOf = (orgId: OrgId, connectionId: string, version: SnapshotHeader) => {
      const cached = cache.get(connectionId)
      if (cached !== undefined && cached.header.version === version.version && cached.header.scanned_at.getTime() === version.scanned_at.getTime()) {
        return Effect.succeed(cached.tables)
      }
      return repo.load(orgId, connectionId).pipe(Effect.map((row) => row?.tables ?? []))
    }

    /** Reads the connection's catalog now, reporting each phase. */
    const readTables = (target: Target, progress: CatalogScan<unknown>["progress"]) => catalog.tables(target, progress)

    /** Reads the catalog and stores what it found over the previous snapshot; the change, if any, goes to the history. */
    const scan = (target: Target) =>
      Effect.gen(function* () {
        const { connectionId, connection } = target
        const orgId = orgOf(target)
        counters.scans++
        yield* repo.scanStarted(orgId, connectionId)
        const started = Date.now()
        const tables = yield* readTables(target, (p) => repo.scanProgress(orgId, connectionId, p.phase, p.tables_done, p.tables_total).pipe(Effect.ignore))
        yield* repo.scanProgress(orgId, connectionId, "storing", tables.length, tables.length).pipe(Effect.ignore)
        const previous = yield* repo.header(orgId, connectionId)
        const fingerprint = fingerprintOf(tables)
        const changed = previous !== null && previous.fingerprint !== fingerprint
        const header: SnapshotHeader = {
          version: previous === null ? 1 : changed ? previous.version + 1 : previous.version,
          fingerprint,
          filters: filtersOf(connection),
          scanned_at: new Date(),
          scan_ms: Date.now() - started,
          table_count: tables.length,
          column_count: tables.reduce((n, t) => n + t.columns.length, 0)
        }
        const diff = changed ? diffSchemas(yield* tablesOf(orgId, connectionId, previous), tables) : null
        const stored = yield* repo.save(orgId, connectionId, { ...header, tables }, previous, diff)
        yield* repo.scanFinished(orgId, connectionId, { version: header.version, changed, tables: tables.length }).pipe(Effect.ignore)
        // A result cached before the structure changed may no longer be what the same SQL returns.
        if (changed) yield* results.invalidate(orgId, connectionId)
        if (!stored) {
          const current = yield* repo.load(orgId, connectionId)
          if (current !== null) return remember({ orgId, connectionId, header: current, tables: current.tables, checkedAt: 0, notes: [] })
        }
        // Checked at 0: the next read confirms it and loads its notes.
        return remember({ orgId, connectionId, header, tables, checkedAt: 0, notes: [] })
      }).pipe(
        Effect.tapError((error) => repo.scanFinished(orgOf(target), target.connectionId, { error: error.message }).pipe(Effect.ignore))
      )

    /** The connection's running scan, or a new one owned by this service's scope. */
    const scanning = (target: Target) =>
      Effect.suspend(() => {
        const existing = running.get(target.connectionId)
        if (existing !== undefined) return Effect.succeed(existing)
        const done = Deferred.unsafeMake<Cached, ScanError>(FiberId.none)
        running.set(target.connectionId, done)
        return scan(target).pipe(
          Effect.exit,
          Effect.flatMap((exit) => Deferred.done(done, exit)),
          Effect.ensuring(Effect.sync(() => running.delete(target.connectionId))),
          Effect.forkIn(scope),
          Effect.as(done)
        )
      })

    /** The stored snapshot, scanned now when there is none under the connection's current globs. */
    const stored = (target: Target, cached: Cached | undefined) =>
      Effect.gen(function* () {
        const header = yield* repo.header(orgOf(target), target.connectionId)
        if (header === null || header.filters !== filtersOf(target.connection)) {
          return yield* Deferred.await(yield* scanning(target))
        }
        if (cached !== undefined && cached.header.version === header.version && cached.header.scanned_at.getTime() === header.scanned_at.getTime()) {
          return cached
        }
        counters.loads++
        const row = yield* repo.load(orgOf(target), target.connectionId)
        if (row === null) return yield* Deferred.await(yield* scanning(target))
        return remember({ orgId: orgOf(target), connectionId: target.connectionId, header: row, tables: row.tables, checkedAt: 0, notes: [] })
      })

    /** The snapshot and its notes through this replica's cache, checked against the store at most every RECHECK_MS. */
    const current = (target: Target) =>
      Effect.gen(function* () {
        const cached = cache.get(target.connectionId)
        if (cached !== undefined && cached.orgId === orgOf(target) && Date.now() - cached.checkedAt < RECHECK_MS) {
          counters.hits++
          return cached
        }
        const entry = yield* stored(target, cached)
        entry.notes = yield* notesRepo.list(orgOf(target), target.connectionId)
        entry.checkedAt = Date.now()
        return entry
      })

    /** The stored snapshot if there is one, without scanning: for the query path, which must not wait for a scan. */
    const storedIfAny = (target: Target) =>
      Effect.gen(function* () {
        const header = yield* repo.header(orgOf(target), target.connectionId)
        if (header === null || header.filters !== filtersOf(target.connection)) return undefined
        const row = yield* repo.load(orgOf(target), target.connectionId)
        return row === null ? undefined : remember({ orgId: orgOf(target), connectionId: target.connectionId, header: row, tables: row.tables, checkedAt: 0, notes: [] })
      })

    /** The relations the statement reads that the snapshot does not list (a view made since, say), outside the system catalogs. */
    const unknownRelations = (entry: Cached, target: Target, sql: string): Array<string> => {
      // Which relations it reads, whatever functions it calls: the query's own check comes after, with the connection's allowance.
      const checked = guard.check(sql, target.connection.db_type, "any")
      if (Either.isLeft(checked)) return []
      if (entry.names === undefined) {
        const relations = entry.tables.flatMap((t) => [{ schema: t.schema, name: t.name }, ...(t.descendants ?? []).map((d) => ({ schema: d.schema, name: d.table }))])
        entry.names = {
          qualified: new Set(relations.map((r) => `${r.schema}.${r.name}`.toLowerCase())),
          bare: new Set(relations.map((r) => r.name.toLowerCase()))
        }
      }
      const names = entry.names
      return checked.right.analysis.tables.flatMap((ref) => {
        const [, schema, table] = qualify(ref.parts, target.connection)
        if (isSystemRelation(DIALECTS[target.connection.db_type].relations, ref.parts)) return []
        const known = schema === undefined ? names.bare.has(table) : names.qualified.has(`${schema}.${table}`)
        return known ? [] : [ref.parts.join(".")]
      })
    }

    /** The snapshot's relations by resolved name, worked out once per snapshot. */
    const scannedRelations = (entry: Cached, target: Target) => {
      if (entry.relations === undefined) {
        const byKey = new Map<string, ScannedRelation>()
        const keyOf = (schema: string, name: string) => relationKey(qualify([schema, name], target.connection))
        for (const t of entry.tables) {
          const descendants = t.descendants ?? []
          const under = (schema: string, table: string): Array<string> =>
            descendants.filter((d) => d.parent.schema === schema && d.parent.table === table).flatMap((d) => [`${d.schema}.${d.table}`, ...under(d.schema, d.table)])
          byKey.set(keyOf(t.schema, t.name), { schema: t.schema, name: t.name, kind: t.kind, definition: t.definition, descendants: descendantSet(descendants.map((d) => `${d.schema}.${d.table}`)) })
          for (const d of descendants) byKey.set(keyOf(d.schema, d.table), { schema: d.schema, name: d.table, kind: "table", definition: null, descendants: descendantSet(under(d.schema, d.table)) })
        }
        entry.relations = { byKey, reads: new Map(), confirmedAt: new Map() }
      }
      return entry.relations
    }

    /**
     * Whether a relation the statement reads, or a view under it at any depth, is no longer what
     * the snapshot says (a view redefined, a table replaced by a view): its masking and blocking
     * were derived from what it was. One catalog read of those relations, where the engine's is cheap.
     */
    /** The relations the statement reads, views under them at any depth included, that no catalog read confirmed within CONFIRMED_FOR_MS. */
    const unconfirmedReads = (entry: Cached, target: Target, sql: string, now: number) => {
      const checked = guard.check(sql, target.connection.db_type, "any")
      if (Either.isLeft(checked)) return []
      const check = (text: string) => guard.check(text, target.connection.db_type, "any")
      const { byKey, reads, confirmedAt } = scannedRelations(entry, target)
      const resolve = (refs: ReadonlyArray<TableReference>) =>
        refs.flatMap((ref) => (isSystemRelation(DIALECTS[target.connection.db_type].relations, ref.parts) ? [] : [relationKey(qualify(ref.parts, target.connection))]))
      const read = new Set<string>()
      const next = resolve(checked.right.analysis.tables)
      while (next.length > 0) {
        const key = next.pop()!
        const relation = byKey.get(key)
        if (relation === undefined || read.has(key)) continue
        read.add(key)
        if (relation.definition === null) continue
        let under = reads.get(key)
        if (under === undefined) reads.set(key, (under = resolve(viewReads(relation.definition, check) ?? [])))
        next.push(...under)
      }
      return [...read].filter((key) => now - (confirmedAt.get(key) ?? 0) > CONFIRMED_FOR_MS)
    }

    const changedSinceScan = (entry: Cached, target: Target, sql: string) =>
      Effect.gen(function* () {
        const { byKey, confirmedAt } = scannedRelations(entry, target)
        const started = Date.now()
        const unconfirmed = unconfirmedReads(entry, target, sql, started)
        if (unconfirmed.length === 0) return false
        const relations = unconfirmed.map((key) => byKey.get(key)!)
        const now = yield* Effect.either(catalog.relationsNow(target, relations))
        if (Either.isLeft(now)) return true
        if (now.right === undefined) return false
        const found = new Map(now.right.map((r) => [`${r.schema}\u0000${r.name}`, r]))
        const changed = relations.some((r) => {
          const current = found.get(`${r.schema}\u0000${r.name}`)
          return (
            current === undefined ||
            shapeOf(current.kind) !== shapeOf(r.kind) ||
            current.definition !== r.definition ||
            // A partition attached or a child inheriting since: its rows are read through the relation now.
            (current.descendants !== undefined && current.descendants !== r.descendants)
          )
        })
        if (!changed) for (const key of unconfirmed) confirmedAt.set(key, started)
        return changed
      })

    /**
     * The connection's PII policy with rules for its views (derived by lineage over their scanned
     * definitions), partitions and inheritance children, and the relations that reach a blocked
     * table. Fail closed: a connection with rules or blocked tables is scanned before its first
     * query, and again when a query reads a relation its snapshot (older than SP_SCHEMA_FRESH_SECONDS) does not list.
     */
    const policyFor = (target: Target & { readonly pii: PiiPolicy }, sql: string) =>
      Effect.suspend(() => {
        const known = policyNow(target, sql)
        return known === undefined ? policyRead(target, sql) : Effect.succeed(known)
      })

    /** What a connection with no rules and no blocks reads under; for one with either, until a scan lists its relations, nothing. */
    const unscannedPolicy = (target: Target & { readonly pii: PiiPolicy }, governed: boolean, hasRules: boolean): RelationPolicy => {
      // Until a scan lists them, no relation of a governed connection is read: what it reads cannot be told.
      const unscanned: MaskingCatalog = governed
        ? { key: `unscanned:${target.connectionId}`, scannedAt: undefined, hasRules, listsEveryRelation: true, relations: new Map() }
        : NO_MASKING
      return { pii: target.pii, reached: NOTHING_REACHED, masking: unscanned }
    }

    /**
     * `policyFor` where it needs no effect: from a snapshot in memory that is fresh for the statement,
     * whose relations a catalog read confirmed lately; undefined where only `policyFor` can tell.
     */
    const policyNow = (target: Target & { readonly pii: PiiPolicy }, sql: string): RelationPolicy | undefined => {
      const hasRules = target.pii.rules.length > 0
      const governed = hasRules || (target.connection.blocked_tables ?? []).length > 0
      if (!governed) return unscannedPolicy(target, governed, hasRules)
      if (catalogGap(target.connection) !== undefined) return undefined
      const entry = cache.get(target.connectionId)
      if (entry === undefined || entry.orgId !== orgOf(target)) return undefined
      if (Date.now() - entry.header.scanned_at.getTime() > freshMillis && unknownRelations(entry, target, sql).length > 0) return undefined
      if (unconfirmedReads(entry, target, sql, Date.now()).length > 0) return undefined
      return derivedPolicy(entry, target, hasRules)
    }

    /** The policy derived from a snapshot, kept on it until the snapshot or the rules change. */
    const derivedPolicy = (entry: Cached, target: Target & { readonly pii: PiiPolicy }, hasRules: boolean): RelationPolicy => {
      const key = `${target.connectionId}:${target.pii.version}:${target.version}:${entry.header.version}:${entry.header.scanned_at.getTime()}`
      if (entry.throughRelations?.key !== key) {
        // A view's definition is traced, never run: the functions it calls are its owner's business.
        const check = (sql: string) => guard.check(sql, target.connection.db_type, "any")
        const derived = hasRules ? rulesThroughRelations(entry.tables, target.pii.rules, target.connection, check) : []
        const rules = [...target.pii.rules, ...derived]
        entry.throughRelations = {
          key,
          // The version moves with the snapshot too, so no result cached under other derived rules is served.
          pii: { rules, version: target.pii.version * 1_000_000 + entry.header.version },
          reached: blocksThroughRelations(entry.tables, target.connection, check),
          // Blocked tables alone need the listing too: a relation the scan does not know may read one.
          masking: maskingCatalog(key, entry.header.scanned_at, entry.tables, rules, target.connection, (definition) => viewReads(definition, check))
        }
      }
      return entry.throughRelations
    }

    const policyRead = (target: Target & { readonly pii: PiiPolicy }, sql: string) =>
      Effect.gen(function* () {
        const hasRules = target.pii.rules.length > 0
        // No rules and no blocks, nothing a relation could carry: the query path reads nothing more.
        const governed = hasRules || (target.connection.blocked_tables ?? []).length > 0
        const plain = unscannedPolicy(target, governed, hasRules)
        if (!governed) return plain
        const gap = catalogGap(target.connection)
        // Its schema cannot be scanned, so no relation of it can be traced: nothing is read, and the answer says what to set.
        if (gap !== undefined) return { ...plain, refusal: `${gap}: a connection with PII rules or blocked tables is read only once its schema is scanned` }
        let entry: Cached | undefined = cache.get(target.connectionId) ?? (yield* storedIfAny(target))
        if (entry?.orgId !== orgOf(target)) entry = undefined
        const stale = entry !== undefined && Date.now() - entry.header.scanned_at.getTime() > freshMillis && unknownRelations(entry, target, sql).length > 0
        const failedAt = scanFailedAt.get(target.connectionId)
        let scanned = false
        if ((entry === undefined || stale) && (failedAt === undefined || Date.now() - failedAt > QUERY_SCAN_EVERY_MS)) {
          const rescanned = yield* Effect.either(Effect.flatMap(scanning(target), Deferred.await))
          if (Either.isLeft(rescanned)) scanFailedAt.set(target.connectionId, Date.now())
          else [entry, scanned] = [rescanned.right, true]
        }
        if (entry === undefined) return plain
        if (!scanned && (yield* changedSinceScan(entry, target, sql))) {
          const rescanned = yield* Effect.either(Effect.flatMap(scanning(target), Deferred.await))
          if (Either.isLeft(rescanned)) {
            scanFailedAt.set(target.connectionId, Date.now())
            return { ...plain, refusal: "a relation it reads changed since the connection's schema was scanned, and the schema could not be scanned again; retry shortly" }
          }
          entry = rescanned.right
        }
        return derivedPolicy(entry, target, hasRules)
      })

    /** The connection's PII policy as `policyFor` derives it. */
    const piiFor = (target: Target & { readonly pii: PiiPolicy }, sql: string) => Effect.map(policyFor(target, sql), (policy) => policy.pii)

    /** Whether the connection's policy lets a caller see a table of these: not blocked, allowed, and reaching no blocked table. */
    const visibleAmong = (connection: ConnectionInput, tables: ReadonlyArray<TableInfo>) => {
      const reached = blocksThroughRelations(tables, connection, (sql) => guard.check(sql, connection.db_type, "any"))
      const allowed = tableVisible(connection)
      return (schema: string, table: string) => allowed(schema, table) && !reached.has(`${schema}.${table}`.toLowerCase())
    }

    /** Whether a caller may see a `schema.table` of the connection, relations that reach a blocked table included (by the stored snapshot). */
    const visibleNames = (target: Target) =>
      Effect.map(Effect.suspend(() => Effect.fromNullable(cache.get(target.connectionId))).pipe(Effect.orElse(() => storedIfAny(target))), (entry) =>
        onQualifiedName(visibleAmong(target.connection, entry?.orgId === orgOf(target) ? entry.tables : []))
      )

    /** After a note is written here, the next read on this replica sees it at once. */
    const notesChanged = (connectionId: string) =>
      Effect.sync(() => {
        const cached = cache.get(connectionId)
        if (cached !== undefined) cached.checkedAt = 0
      })

    /** The snapshot as callers see it: tables that reach a blocked one left out, statistics of PII columns withheld. */
    const viewOf = (target: Target, entry: Cached, pii: PiiPolicy): SchemaView => {
      const connection = target.connection
      const key = `${target.version}:${pii.version}:${notesKey(entry.notes)}`
      if (entry.curated?.key !== key) {
        const shownOf = (tables: ReadonlyArray<TableInfo>) => withoutPiiStatistics(tables, pii.rules, connection)
        const all = shownOf(withNotes(entry.tables, entry.notes))
        const scanned = shownOf(entry.tables)
        const shows = visibleAmong(connection, entry.tables)
        const shown = all.map((t, i) => ({ t, i })).filter(({ t }) => shows(t.schema, t.name))
        entry.curated = { key, all, tables: shown.map(({ t }) => t), scanned: shown.map(({ i }) => scanned[i]!), set: new Set(shown.map(({ t }) => t)) }
      }
      const curated = entry.curated
      const visible = (t: TableInfo) => curated.set.has(t)
      const tables = curated.tables
      return {
        connection,
        visible,
        tables,
        scanned: curated.scanned,
        notes: entry.notes,
        search: () => (curated.search ??= new SchemaSearch(curated.all, searchNotes(entry.notes))),
        snapshot: {
          connection: connection.name,
          db_type: connection.db_type,
          version: entry.header.version,
          fingerprint: entry.header.fingerprint,
          scanned_at: entry.header.scanned_at,
          scan_ms: entry.header.scan_ms,
          table_count: tables.length,
          column_count: tables.reduce((n, t) => n + t.columns.length, 0),
          tables
        }
      }
    }

    /** The connection's schema as the caller may see it. */
    const view = Effect.fn("Schemas.view")(function* (principal: Principal, name: string) {
      const target = yield* connections.target(principal, name)
      const entry = yield* current(target)
      // The rules a view, partition or generated column takes from a PII column are withheld alike.
      return viewOf(target, entry, (yield* policyFor(target, "")).pii)
    })

    const statusOf = (target: Target) =>
      Effect.map(
        repo.scanStatus(orgOf(target), target.connectionId),
        (row): RefreshStatus => ({
          connection: target.connection.name,
          state: row === null ? "idle" : row.state,
          phase: (row?.phase ?? null) as RefreshStatus["phase"],
          tables_done: row?.tables_done ?? 0,
          tables_total: row?.tables_total ?? null,
          started_at: row?.started_at ?? null,
          finished_at: row?.finished_at ?? null,
          error: row?.error ?? null,
          version: row?.version ?? null,
          changed: row?.changed ?? null
        })
      )

    /** Starts a background scan (or joins the one running) and reports its status at once. */
    const refresh = Effect.fn("Schemas.refresh")(function* (principal: Principal, name: string) {
      const target = yield* connections.target(principal, name)
      const gap = catalogGap(target.connection)
      if (gap !== undefined) return yield* new InvalidRequest({ message: gap })
      const started = !running.has(target.connectionId)
      yield* scanning(target)
      const status = yield* statusOf(target)
      // The scan fiber may not have written its first row yet.
      return started && status.state !== "running" ? { ...status, state: "running" as const, phase: "queued" as const } : status
    })

    const status = Effect.fn("Schemas.status")(function* (principal: Principal, name: string) {
      return yield* statusOf(yield* connections.target(principal, name))
    })

    /** Starts a scan of every connection of the org that has none under its current globs. */
    const warmup = Effect.fn("Schemas.warmup")(function* (principal: Principal) {
      const page = yield* connections.list(principal, { limit: 1000 })
      const started: Array<string> = []
      const ready: Array<string> = []
      const skipped: Array<{ connection: string; reason: string }> = []
      for (const { name } of page.items) {
        const target = yield* Effect.either(connections.target(principal, name))
        if (Either.isLeft(target)) {
          skipped.push({ connection: name, reason: target.left.message })
          continue
        }
        const gap = catalogGap(target.right.connection)
        if (gap !== undefined) {
          skipped.push({ connection: name, reason: gap })
          continue
        }
        const header = yield* repo.header(principal.orgId, target.right.connectionId)
        if (header !== null && header.filters === filtersOf(target.right.connection)) ready.push(name)
        else {
          yield* scanning(target.right)
          started.push(name)
        }
      }
      return { started, ready, skipped }
    })

    /** For the refresh loop: scans a connection of any org and waits for it; failures are recorded in its status. */
    const refreshIn = (orgId: OrgId, name: string) =>
      connections.targetIn(orgId, name).pipe(
        Effect.flatMap(scanning),
        Effect.flatMap(Deferred.await),
        Effect.asVoid
      )

    /** Scans a connection of any org now, then gives its version and the changes recorded after `since`, oldest first, blocked tables left out. */
    const scanAndChangesSince = (orgId: OrgId, name: string, since: number | null) =>
      Effect.gen(function* () {
        const target = yield* connections.targetIn(orgId, name)
        const scanned = yield* Deferred.await(yield* scanning(target))
        const header = yield* repo.header(orgId, target.connectionId)
        const rows = since === null ? [] : yield* repo.changes(orgId, target.connectionId, 1000, null)
        const visible = onQualifiedName(visibleAmong(target.connection, scanned.tables))
        return {
          version: header?.version ?? null,
          changes: rows
            .filter((r) => r.to_version > since!)
            .reverse()
            .map((r) => ({ ...r, diff: visiblePart(r.diff, visible) }))
        }
      })

    const cacheStats = (principal: Principal) => {
      const own = [...cache.values()].filter((e) => e.orgId === principal.orgId)
      return {
        connections: own.length,
        tables: own.reduce((n, e) => n + e.tables.length, 0),
        search_indexes: own.filter((e) => e.curated?.search !== undefined).length,
        scans_running: [...running.keys()].filter((id) => own.some((e) => e.connectionId === id)).length,
        // Counters are this replica's, across orgs: they say how well the cache works, not what any org holds.
        replica: { entries: cache.size, capacity: CACHE_CAPACITY, hits: counters.hits, loads: counters.loads, scans: counters.scans }
      }
    }

    /** Drops this replica's copies (of one connection, or all the org's); the next read loads the stored snapshot again. */
    const invalidate = Effect.fn("Schemas.invalidate")(function* (principal: Principal, name: string | undefined) {
      const only = name === undefined ? undefined : (yield* connections.target(principal, name)).connectionId
      let dropped = 0
      for (const [id, entry] of cache) {
        if (entry.orgId === principal.orgId && (only === undefined || id === only)) {
          cache.delete(id)
          dropped++
        }
      }
      return { invalidated: dropped }
    })

    /** The visible tables as the catalog lists them now, storing nothing (for a live diff). */
    const readLive = (target: Target) =>
      readTables(target, () => Effect.void).pipe(
        Effect.map((tables) => {
          const shows = visibleAmong(target.connection, tables)
          return tables.filter((t) => shows(t.schema, t.name))
        })
      )

    return { view, readLive, policyFor, policyNow, piiFor, visibleNames, notesChanged, scanAndChangesSince, refresh, status, warmup, refreshIn, cacheStats, invalidate, dueForRefresh: repo.dueForRefresh } as const
  }),
  dependencies: [SchemaRepo.Default, SchemaNotesRepo.Default, SqlGuard.Default, CatalogReader.Default, Connections.Default, ResultCache.Default]
}) {}
