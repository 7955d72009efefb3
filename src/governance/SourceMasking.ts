import { Either } from "effect"
import type { ConnectionInput } from "../domain/Connection"
import type { PiiAction, PiiRule } from "../domain/Pii"
import type { TableInfo } from "../domain/SchemaSnapshot"
import { quoteIdentifier } from "./Catalog"
import { queryShapeOf } from "./lineage/QueryShapeOf"
import { type HashPads, maskedColumn } from "./MaskExpressions"
import { strongest } from "./PiiMasking"
import { inTotalOrder, outputCount } from "./RowOrder"
import { Refusal, type TableReference } from "./sqlguard/Analysis"
import { qualify, relationKey } from "./sqlguard/Names"
import type { CheckedStatement } from "./sqlguard/SqlGuard"
import { isSystemRelation, ownRowsColumn } from "./sqlguard/SystemRelations"
import { sameTable } from "./TablePolicy"

export interface SourceColumn {
  readonly name: string
  readonly type: string
  readonly action: PiiAction | undefined
}

/** A relation the snapshot lists, with the action each of its columns is masked with. */
export interface CatalogRelation {
  /** Its schema and name as the catalog spells them. */
  readonly schema: string
  readonly name: string
  readonly columns: ReadonlyArray<SourceColumn>
  /** Some column has a rule: every reference to it reads through a masking projection. */
  readonly masked: boolean
  /** A view whose definition computes with a PII column when it is read (a materialized view does not: it stores its result). */
  readonly computesOverPii: boolean
  /** A partition or inheritance child that may hold its rows by the value of a masked column (see `partitionedByPii`): the table it belongs to. */
  readonly placedByPiiOf?: string
}

/**
 * What masking at the source knows of one connection, for one version of its snapshot and rules:
 * every relation the snapshot lists (partitions and inheritance children too) by `schema.table`.
 * `scanned` is false where there is no snapshot to know relations by.
 */
export interface MaskingCatalog {
  readonly key: string
  /** When the snapshot was taken; undefined where there is none. */
  readonly scannedAt: Date | undefined
  readonly hasRules: boolean
  /** A relation the snapshot does not list is refused: on a connection with PII rules or blocked tables, what it reads cannot be told. */
  readonly listsEveryRelation: boolean
  readonly relations: ReadonlyMap<string, CatalogRelation>
}

/** A connection with no PII rules: nothing is rewritten. */
export const NO_MASKING: MaskingCatalog = { key: "none", scannedAt: undefined, hasRules: false, listsEveryRelation: false, relations: new Map() }

/**
 * The catalog for masking at the source, from a snapshot and the connection's rules (those derived
 * through views, partitions and children included). A partition is listed only under its parent
 * in the snapshot: it has its parent's columns. `viewReads` gives the relations a view's
 * definition reads, or undefined where it does not parse.
 */
export const maskingCatalog = (
  key: string,
  scannedAt: Date,
  tables: ReadonlyArray<TableInfo>,
  rules: ReadonlyArray<PiiRule>,
  connection: ConnectionInput,
  viewReads: (definition: string) => ReadonlyArray<TableReference> | undefined
): MaskingCatalog => {
  const named = rules.map((rule) => ({ table: qualify(rule.table.split("."), connection), column: rule.column.toLowerCase(), action: rule.action }))
  const relationOf = (schema: string, name: string, columns: TableInfo["columns"]): CatalogRelation => {
    const own = named.filter((rule) => sameTable(rule.table, qualify([schema, name], connection)))
    const withActions = columns.map((c) => ({ name: c.name, type: c.type, action: strongest(own.filter((r) => r.column === c.name.toLowerCase()).map((r) => r.action)) }))
    return { schema, name, columns: withActions, masked: withActions.some((c) => c.action !== undefined), computesOverPii: false }
  }
  const relations = new Map<string, CatalogRelation>()
  const keyOf = (schema: string, name: string) => relationKey(qualify([schema, name], connection))
  for (const t of tables) relations.set(keyOf(t.schema, t.name), relationOf(t.schema, t.name, t.columns))
  for (const t of tables) {
    const table = relations.get(keyOf(t.schema, t.name))!
    const placedByPii = partitionedByPii(t, table)
    for (const d of t.descendants ?? []) {
      if (relations.has(keyOf(d.schema, d.table))) continue
      const partition = relationOf(d.schema, d.table, t.columns)
      relations.set(keyOf(d.schema, d.table), placedByPii(d) ? { ...partition, placedByPiiOf: `${t.schema}.${t.name}` } : partition)
    }
  }
  // A view computes over PII when its definition reads a masked relation or such a view; each round finds one more level.
  const views = tables.filter((t) => t.kind === "view" && t.definition !== null).map((t) => ({ key: keyOf(t.schema, t.name), reads: viewReads(t.definition!) }))
  for (let added = 1; added > 0; ) {
    added = 0
    for (const view of views) {
      const relation = relations.get(view.key)!
      if (relation.computesOverPii) continue
      const reads = view.reads
      const overPii =
        reads === undefined
          ? named.length > 0
          : reads.some((ref) => {
              const read = relations.get(relationKey(qualify(ref.parts, connection)))
              return read !== undefined && (read.masked || read.computesOverPii)
            })
      if (overPii) {
        relations.set(view.key, { ...relation, computesOverPii: true })
        added++
      }
    }
  }
  return { key, scannedAt, hasRules: named.length > 0, listsEveryRelation: true, relations }
}

/**
 * Which of a table's partitions and inheritance children may hold their rows by the value of a
 * masked column: those under a level (the table itself, or a descendant with descendants of its
 * own) partitioned by a key that names one, and every inheritance child of a table with masked
 * columns (it holds the rows its writers or its constraints chose, by whatever column). Reading
 * such a relation alone says where its rows' values lie.
 */
const partitionedByPii = (t: TableInfo, table: CatalogRelation) => {
  const masked = new Set(table.columns.filter((c) => c.action !== undefined).map((c) => c.name.toLowerCase()))
  // An unpartitioned level's descendants are inheritance children.
  const keyed = (key: string | null | undefined) => (key == null ? masked.size > 0 : key.toLowerCase().split(/[^\p{L}\p{N}_$]+/u).some((word) => masked.has(word)))
  const levels = new Map((t.descendants ?? []).map((d) => [`${d.schema}.${d.table}`, d]))
  return (d: NonNullable<TableInfo["descendants"]>[number]) => {
    for (let parent = d.parent, hops = 0; hops <= levels.size; hops++) {
      if (parent.schema === t.schema && parent.table === t.name) return keyed(t.partition_key)
      const level = levels.get(`${parent.schema}.${parent.table}`)
      if (level === undefined) return true
      if (keyed(level.partition_key)) return true
      parent = level.parent
    }
    return true
  }
}

/** A statement as it runs: the caller's, or the caller's with every masked relation read through its masking projection. */
export interface SourceMasked {
  readonly sql: string
  readonly rewritten: boolean
  /** It reads a view that computes with raw PII values, whose errors may quote one. */
  readonly computesOverPii: boolean
}

type Recheck = (sql: string) => Either.Either<CheckedStatement, Refusal>

const unlisted = (ref: TableReference, catalog: MaskingCatalog) =>
  new Refusal(
    catalog.scannedAt !== undefined
      ? `there is no relation ${ref.parts.join(".")} in the connection's schema as scanned at ${catalog.scannedAt.toISOString()}: check the name, or, if it is newer than the scan or in a schema the scan leaves out (schema_include, schema_exclude), refresh the schema. On a connection with PII rules or blocked tables Sluice reads no relation it has not traced`
      : "the connection's schema has not been scanned, so Sluice cannot tell what its relations read (PII columns, blocked tables); refresh the schema (its catalog must be readable)"
  )

const placedByPii = (ref: TableReference, table: string) =>
  new Refusal(
    `${ref.parts.join(".")} holds a share of ${table}'s rows, chosen by a partition key or by what was put in it, where a column has PII rules: which rows it holds can say what their values are; read ${table} instead`
  )

/** `instead`: what Sluice reads in the relation's place (a masked view of it, its rows about this database). */
const unplaceable = (ref: TableReference, instead: string) =>
  new Refusal(`${ref.parts.join(".")} is read where Sluice cannot put ${instead} in its place; name it in a FROM clause (not TABLE, ONLY or a sampled table)`)

/**
 * Masking at the source: every reference to a relation with PII rules is rewritten into a derived
 * table that selects its columns with each masked column replaced by its masked value, computed
 * in the database, so no predicate, join, aggregate, ordering, cast, whole-row value or error
 * can see a raw value. So is every reference to a system relation that describes every database
 * of the server (MySQL's information_schema), into one that keeps the rows about the connection's
 * own: the database boundary SELECT and SHOW keep. The rewritten text must parse, and every
 * reference to such a relation in it must be the one inside a projection put there, or the
 * statement is refused. So is one that reads a relation the snapshot does not list, while the
 * connection has rules. A statement that reads a masked relation is also put in an order of its
 * own values (`inTotalOrder`), since the engine's read order can follow a masked one.
 */
export const maskAtSource = (
  checked: CheckedStatement,
  connection: ConnectionInput,
  catalog: MaskingCatalog,
  pads: HashPads,
  recheck: Recheck
): Either.Either<SourceMasked, Refusal> => {
  const asWritten: SourceMasked = { sql: checked.sql, rewritten: false, computesOverPii: false }
  if (checked.analysis.kind !== "query" && checked.analysis.kind !== "explain") return Either.right(asWritten)
  const { profile, sql } = checked
  const quote = (name: string) => quoteIdentifier(profile.dbType, name)
  const relationOf = (ref: TableReference) => catalog.relations.get(relationKey(qualify(ref.parts, connection)))
  // The column naming the database a system relation's row is about, where the connection names its own.
  const ownDatabase = connection.db_type === "mysql" ? connection.database : undefined
  const boundaryOf = (ref: TableReference) => (ownDatabase === undefined ? undefined : ownRowsColumn(profile.relations, ref.parts))
  // The derived table put in a reference's place: what it selects, the relation it reads, what follows, and whether it masks PII.
  const edits: Array<{ readonly ref: TableReference; readonly select: string; readonly relation: string; readonly rest: string; readonly masks: boolean }> = []
  let computesOverPii = false
  for (const ref of checked.analysis.tables) {
    if (isSystemRelation(profile.relations, ref.parts)) {
      const column = boundaryOf(ref)
      if (column === undefined) continue
      if (ref.at === undefined) return Either.left(unplaceable(ref, "its rows about this database"))
      edits.push({ ref, select: "*", relation: ref.parts.map(quote).join("."), rest: ` where ${quote(column)} = database()`, masks: false })
      continue
    }
    if (!catalog.listsEveryRelation) continue
    const relation = relationOf(ref)
    if (relation === undefined) return Either.left(unlisted(ref, catalog))
    if (!catalog.hasRules) continue
    if (relation.placedByPiiOf !== undefined) return Either.left(placedByPii(ref, relation.placedByPiiOf))
    computesOverPii ||= relation.computesOverPii
    if (!relation.masked) continue
    if (ref.at === undefined) return Either.left(unplaceable(ref, "a masked view of it"))
    const columns = relation.columns.map((c) => maskedColumn(profile.dbType, c, pads)).join(", ")
    // Qualified as the catalog spells it: a name a CTE of the statement could take (WITH RECURSIVE reads later ones) would not be the table.
    edits.push({ ref, select: columns, relation: `${quote(relation.schema)}.${quote(relation.name)}`, rest: "", masks: true })
  }
  if (edits.length === 0) return Either.right({ ...asWritten, computesOverPii })
  edits.sort((a, b) => a.ref.at!.start - b.ref.at!.start)
  let text = ""
  let from = 0
  const placed = new Set<number>()
  for (const { ref, select, relation, rest } of edits) {
    const at = ref.at!
    if (at.start < from) return Either.left(unplaceable(ref, "a masked view of it"))
    text += `${sql.slice(from, at.start)}(select ${select} from `
    placed.add(text.length)
    text += `${relation}${rest})${at.aliased ? "" : ` as ${at.alias}`}`
    from = at.end
  }
  text += sql.slice(from)
  // Rows read from a masked relation come in the order the engine reads them, which can follow a masked value: the statement is put in an order of its own.
  if (checked.analysis.kind === "query" && edits.some((edit) => edit.masks)) {
    const columnsOf = (parts: ReadonlyArray<string>) => relationOf({ parts })?.columns.length
    const ordered = inTotalOrder(text, profile, () => outputCount(queryShapeOf(checked), columnsOf))
    if (Either.isLeft(ordered)) return Either.left(ordered.left)
    const shifted = [...placed].map((at) => at + ordered.right.inserts.reduce((by, insert) => (insert.at < at ? by + insert.text.length : by), 0))
    placed.clear()
    for (const at of shifted) placed.add(at)
    text = ordered.right.sql
  }
  // The rewritten text must parse, and read every masked or bounded relation only inside a projection put there.
  const rechecked = recheck(text)
  const reads = Either.isRight(rechecked)
    ? rechecked.right.analysis.tables.filter((ref) =>
        isSystemRelation(profile.relations, ref.parts) ? boundaryOf(ref) !== undefined : relationOf(ref)?.masked === true
      )
    : []
  const inPlace = reads.filter((ref) => ref.at !== undefined && placed.has(ref.at.start))
  if (Either.isLeft(rechecked) || inPlace.length !== reads.length || inPlace.length !== placed.size) {
    return Either.left(new Refusal("the statement could not be rewritten to mask its PII columns where they are read; simplify how it names tables with PII rules"))
  }
  return Either.right({ sql: text, rewritten: true, computesOverPii })
}

// A checked statement is the guard's memoized verdict (its capped form too), so a repeated statement's rewrite is known by the same object.
const rewrites = new WeakMap<CheckedStatement, Map<string, Either.Either<SourceMasked, Refusal>>>()
const REWRITES_PER_STATEMENT = 8

/** `maskAtSource`, remembered per statement, catalog version and key. */
export const maskedAtSource = (checked: CheckedStatement, connection: ConnectionInput, catalog: MaskingCatalog, pads: HashPads, recheck: Recheck) => {
  if (!catalog.hasRules) return maskAtSource(checked, connection, catalog, pads, recheck)
  const key = `${catalog.key}\u0000${pads.key}`
  let known = rewrites.get(checked)
  const hit = known?.get(key)
  if (hit !== undefined) return hit
  const verdict = maskAtSource(checked, connection, catalog, pads, recheck)
  if (known === undefined) rewrites.set(checked, (known = new Map()))
  if (known.size >= REWRITES_PER_STATEMENT) known.delete(known.keys().next().value!)
  known.set(key, verdict)
  return verdict
}
