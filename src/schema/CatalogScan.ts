import { createHash } from "node:crypto"
import { Effect, type Types } from "effect"
import { globRegex } from "../domain/Glob"
import type { ColumnInfo, Descendant, ForeignKey, IndexInfo, SchemaSnapshot, TableInfo, TableKind } from "../domain/SchemaSnapshot"
import { qualifiedName, TABLE_KINDS } from "../domain/SchemaSnapshot"
import { type CatalogQueries, type CatalogRow, type ReshapedRead, TABLE_FACTS } from "./catalog/CatalogQueries"
import { keysOf } from "./SchemaDiff"

type Row = CatalogRow

export interface ScanProgress {
  readonly phase: "tables" | "columns" | "keys" | "indexes" | "statistics"
  readonly tables_done: number
  readonly tables_total: number | null
}

/** What a catalog read returns: its column names and rows by position. */
export interface CatalogResult {
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<Row>
}

/** What a scan needs from a connection: one catalog read at a time. */
export interface CatalogScan<E> {
  readonly read: (sql: string) => Effect.Effect<CatalogResult, E>
  readonly progress: (progress: ScanProgress) => Effect.Effect<void>
  readonly include: ReadonlyArray<string> | undefined
  readonly exclude: ReadonlyArray<string> | undefined
}

const text = (value: unknown): string | null => (value === null || value === undefined ? null : String(value))
const count = (value: unknown): number | null => {
  if (value === null || value === undefined || value === "") return null
  const n = Number(value)
  return Number.isFinite(n) && n >= 0 ? n : null
}
const flag = (value: unknown): boolean =>
  value === true || value === 1 || value === 1n || (typeof value === "string" && /^(1|t|true|yes|y)$/i.test(value))
const names = (value: unknown): ReadonlyArray<string> => {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string")
  if (typeof value !== "string" || value === "") return []
  try {
    const parsed: unknown = JSON.parse(value)
    return Array.isArray(parsed) ? parsed.map((v) => (v === null ? "" : String(v))) : []
  } catch {
    return []
  }
}
/** A sort or cluster key: a JSON array, or a list such as Snowflake's `LINEAR(a, to_date(b))`, split at its top-level commas. */
const keyList = (value: unknown): ReadonlyArray<string> => {
  if (typeof value !== "string" || !/^\s*\[/.test(value)) {
    const list = text(value)?.trim().replace(/^linear\s*\((.*)\)$/is, "$1")
    return list === undefined || list === "" ? [] : splitTopLevel(list)
  }
  return names(value)
}
const splitTopLevel = (list: string) => {
  const parts: Array<string> = []
  let depth = 0
  let start = 0
  for (let i = 0; i < list.length; i++) {
    const ch = list[i]
    if (ch === "(") depth++
    else if (ch === ")") depth--
    else if (ch === "," && depth === 0) {
      parts.push(list.slice(start, i).trim())
      start = i + 1
    }
  }
  parts.push(list.slice(start).trim())
  return parts.filter((part) => part !== "")
}
const kindOf = (value: unknown): TableKind => {
  const kind = String(value).toLowerCase()
  return (TABLE_KINDS as ReadonlyArray<string>).includes(kind) ? (kind as TableKind) : "table"
}

/** A glob with a dot matches `schema.table`; without one it matches the schema. */
export const globFilter = (include: ReadonlyArray<string> | undefined, exclude: ReadonlyArray<string> | undefined) => {
  const compile = (globs: ReadonlyArray<string>) =>
    globs.map((glob) => ({ regex: globRegex(glob), qualified: glob.includes(".") }))
  const inc = include === undefined || include.length === 0 ? undefined : compile(include)
  const exc = compile(exclude ?? [])
  const hit = (globs: ReturnType<typeof compile>, schema: string, table: string) =>
    globs.some((g) => g.regex.test(g.qualified ? `${schema}.${table}` : schema))
  return (schema: string, table: string) => (inc === undefined || hit(inc, schema, table)) && !hit(exc, schema, table)
}

interface Building {
  table: Types.Mutable<Omit<TableInfo, "columns" | "primary_key" | "foreign_keys" | "unique_keys" | "indexes" | "descendants">>
  descendants: Array<Descendant>
  columns: Array<ColumnInfo>
  primaryKey: Array<string>
  foreignKeys: Array<ForeignKey>
  uniqueKeys: Array<ReadonlyArray<string>>
  indexes: Array<IndexInfo>
}

const keyOf = (schema: unknown, table: unknown) => `${String(schema)}\u0000${String(table)}`

/** Reads a connection's catalog and assembles its tables, keeping those its include/exclude globs let through. */
export const scanCatalog = <E>(queries: CatalogQueries, scan: CatalogScan<E>) =>
  Effect.gen(function* () {
    const keep = globFilter(scan.include, scan.exclude)
    const tables = new Map<string, Building>()
    yield* scan.progress({ phase: "tables", tables_done: 0, tables_total: null })
    const rowsOf = (sql: string) => Effect.map(scan.read(sql), (result) => result.rows)
    for (const r of yield* rowsOf(queries.relations)) {
      const schema = String(r[0])
      const name = String(r[1])
      if (!keep(schema, name)) continue
      tables.set(keyOf(schema, name), {
        table: {
          schema,
          name,
          kind: kindOf(r[2]),
          comment: text(r[3]),
          row_estimate: count(r[4]),
          size_bytes: count(r[5]),
          definition: text(r[6]),
          partition_key: text(r[7]),
          engine: text(r[8]),
          sort_keys: keyList(r[9]),
          cluster_keys: keyList(r[10])
        },
        descendants: [],
        columns: [],
        primaryKey: [],
        foreignKeys: [],
        uniqueKeys: [],
        indexes: []
      })
    }
    if (queries.descendants !== undefined) {
      for (const r of yield* rowsOf(queries.descendants)) {
        const partitionKey = text(r[6])
        tables.get(keyOf(r[0], r[1]))?.descendants.push({
          schema: String(r[2]),
          table: String(r[3]),
          parent: { schema: String(r[4]), table: String(r[5]) },
          ...(partitionKey === null ? {} : { partition_key: partitionKey })
        })
      }
    }
    const total = tables.size
    yield* scan.progress({ phase: "columns", tables_done: 0, tables_total: total })
    const declaredPk = new Map<string, Array<string>>()
    for (const r of yield* rowsOf(queries.columns)) {
      const key = keyOf(r[0], r[1])
      const entry = tables.get(key)
      if (entry === undefined) continue
      const name = String(r[2])
      const nullable = r[4]
      entry.columns.push({
        name,
        type: String(r[3] ?? ""),
        nullable: typeof nullable === "string" && /^(no|n)$/i.test(nullable) ? false : flag(nullable),
        default: text(r[5]),
        comment: text(r[6]),
        primary_key: false,
        distinct_estimate: count(r[8]),
        null_fraction: count(r[9])
      })
      if (flag(r[7])) declaredPk.set(key, [...(declaredPk.get(key) ?? []), name])
    }
    const keyRows =
      queries.keys !== undefined
        ? rowsOf(queries.keys)
        : queries.keyColumns !== undefined
          ? Effect.map(readKeyColumns(queries.keyColumns, scan), keysFromColumns)
          : undefined
    if (keyRows !== undefined) {
      yield* scan.progress({ phase: "keys", tables_done: Math.floor(total / 2), tables_total: total })
      for (const r of yield* keyRows) {
        const entry = tables.get(keyOf(r[0], r[1]))
        if (entry === undefined) continue
        const columns = names(r[4])
        switch (String(r[3])) {
          case "p":
            entry.primaryKey = [...columns]
            break
          case "u":
            entry.uniqueKeys.push(columns)
            break
          case "f":
            entry.foreignKeys.push({
              name: text(r[2]),
              columns,
              references: { schema: String(r[5] ?? entry.table.schema), table: String(r[6]), columns: names(r[7]) }
            })
        }
      }
    }
    if (queries.indexes !== undefined) {
      yield* scan.progress({ phase: "indexes", tables_done: Math.floor((total * 3) / 4), tables_total: total })
      for (const r of yield* rowsOf(queries.indexes)) {
        const entry = tables.get(keyOf(r[0], r[1]))
        if (entry === undefined) continue
        entry.indexes.push({ name: String(r[2]), unique: flag(r[3]), columns: names(r[4]), definition: text(r[5]) })
      }
    }
    if (queries.facts !== undefined) {
      yield* scan.progress({ phase: "statistics", tables_done: Math.floor((total * 7) / 8), tables_total: total })
      for (const sql of queries.facts) {
        const rows = yield* rowsOf(sql).pipe(
          Effect.tapError((error) => Effect.logWarning("a catalog statistics read failed; the scan goes on without it", error)),
          Effect.orElseSucceed((): ReadonlyArray<Row> => [])
        )
        applyFacts(tables, rows)
      }
    }
    const primaryKeyOf = (key: string) => {
      const declared = tables.get(key)?.primaryKey ?? []
      return declared.length > 0 ? declared : (declaredPk.get(key) ?? [])
    }
    return [...tables.entries()].map(([key, entry]): TableInfo => {
      const primaryKey = primaryKeyOf(key)
      const pk = new Set(primaryKey)
      return {
        ...entry.table,
        columns: entry.columns.map((c) => ({ ...c, primary_key: pk.has(c.name) })),
        primary_key: primaryKey,
        foreign_keys: entry.foreignKeys.map((fk) => withImplicitTarget(fk, primaryKeyOf)),
        unique_keys: entry.uniqueKeys,
        indexes: entry.indexes,
        ...(entry.descendants.length > 0 ? { descendants: entry.descendants } : {})
      }
    })
  })

/** Reads key columns by one query, or by engine-shaped reads reshaped and concatenated. */
const readKeyColumns = <E>(reads: string | ReadonlyArray<ReshapedRead>, scan: CatalogScan<E>) =>
  typeof reads === "string"
    ? Effect.map(scan.read(reads), (result) => result.rows)
    : Effect.map(
        Effect.forEach(reads, (read) =>
          Effect.map(scan.read(read.sql), (result) => read.reshape(result.rows, result.columns.map((c) => c.toLowerCase())))
        ),
        (parts) => parts.flat()
      )

/** Overlays facts (schema, table, fact, value) on the tables they name; unknown facts are ignored. */
const applyFacts = (tables: Map<string, Building>, rows: ReadonlyArray<Row>) => {
  const seenKeys = new Set<string>()
  for (const r of rows) {
    const entry = tables.get(keyOf(r[0], r[1]))
    const fact = String(r[2]) as (typeof TABLE_FACTS)[number]
    if (entry === undefined || !TABLE_FACTS.includes(fact) || r[3] === null || r[3] === undefined) continue
    const table = entry.table
    switch (fact) {
      case "row_estimate":
      case "size_bytes":
        table[fact] = count(r[3])
        break
      case "comment":
      case "partition_key":
      case "engine":
        table[fact] = text(r[3])
        break
      case "sort_key":
      case "cluster_key": {
        const field = fact === "sort_key" ? "sort_keys" : "cluster_keys"
        // The first row of a read for a table replaces what `relations` said; later ones append.
        const seen = `${keyOf(r[0], r[1])}\u0000${fact}`
        table[field] = seenKeys.has(seen) ? [...table[field], String(r[3])] : [String(r[3])]
        seenKeys.add(seen)
      }
    }
  }
}

/** One row per key column (schema, table, name, kind, column, ref schema, ref table, ref column), in key order, as one row per key. */
const keysFromColumns = (rows: ReadonlyArray<Row>): Array<Row> => {
  const keys: Array<[unknown, unknown, unknown, unknown, Array<string>, unknown, unknown, Array<string>]> = []
  for (const r of rows) {
    const last = keys.at(-1)
    if (last !== undefined && last[0] === r[0] && last[1] === r[1] && last[2] === r[2]) {
      last[4].push(String(r[4]))
      if (r[7] !== null && r[7] !== undefined) last[7].push(String(r[7]))
    } else keys.push([r[0], r[1], r[2], r[3], [String(r[4])], r[5], r[6], r[7] === null || r[7] === undefined ? [] : [String(r[7])]])
  }
  return keys.map(([schema, table, name, kind, columns, refSchema, refTable, refColumns]) => [schema, table, name, kind, columns, refSchema, refTable, refColumns])
}

/** SQLite lets a foreign key name only its table, meaning that table's primary key. */
const withImplicitTarget = (fk: ForeignKey, primaryKeyOf: (key: string) => ReadonlyArray<string>): ForeignKey => {
  if (fk.references.columns.length > 0 && fk.references.columns.every((c) => c !== "")) return fk
  const pk = primaryKeyOf(keyOf(fk.references.schema, fk.references.table))
  return { ...fk, references: { ...fk.references, columns: pk.length > 0 ? pk : fk.references.columns } }
}

/** SHA-256 of the structure a diff reports (tables, columns, types, nullability, keys): a new fingerprint is a new version. */
export const fingerprintOf = (tables: ReadonlyArray<TableInfo>) => {
  const hash = createHash("sha256")
  for (const t of [...tables].sort((a, b) => qualifiedName(a).localeCompare(qualifiedName(b)))) {
    hash.update(JSON.stringify([t.schema, t.name, t.columns.map((c) => [c.name, c.type, c.nullable])]))
    hash.update(keysOf(t))
  }
  return hash.digest("hex")
}

export const snapshotOf = (
  header: Pick<SchemaSnapshot, "connection" | "db_type" | "version" | "scanned_at" | "scan_ms">,
  tables: ReadonlyArray<TableInfo>
): SchemaSnapshot => ({
  ...header,
  fingerprint: fingerprintOf(tables),
  table_count: tables.length,
  column_count: tables.reduce((n, t) => n + t.columns.length, 0),
  tables
})
