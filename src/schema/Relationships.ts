import type { ColumnInfo, TableInfo } from "../domain/SchemaSnapshot"
import { qualifiedName } from "../domain/SchemaSnapshot"
import { stem } from "../domain/Words"

export interface Relationship {
  readonly from_table: string
  readonly from_columns: ReadonlyArray<string>
  readonly to_table: string
  readonly to_columns: ReadonlyArray<string>
  readonly kind: "declared" | "inferred"
  /** 1 for a declared key; for an inferred one, how sure the naming and types make it. */
  readonly confidence: number
  readonly reason: string
}

const typeFamily = (type: string) => {
  const t = type.toLowerCase()
  if (/int|serial|number|numeric|decimal/.test(t)) return "number"
  if (/uuid|uniqueidentifier/.test(t)) return "uuid"
  if (/char|text|string|varchar/.test(t)) return "text"
  return t
}

/** The single-column key other tables would point at: the primary key, else a column named `id`. */
const keyColumn = (table: TableInfo): ColumnInfo | undefined => {
  if (table.primary_key.length === 1) return table.columns.find((c) => c.name === table.primary_key[0])
  return table.primary_key.length === 0 ? table.columns.find((c) => c.name.toLowerCase() === "id") : undefined
}

/** `customer_id`, `customerId`, `customer_key` → `customer`. */
const referencedStem = (column: string) => {
  const match = /^(.+?)_?(id|key)$/i.exec(column)
  return match === null || match[1]!.length < 2 ? undefined : stem(match[1]!.replace(/_$/, "").toLowerCase())
}

const declared = (tables: ReadonlyArray<TableInfo>): Array<Relationship> =>
  tables.flatMap((t) =>
    t.foreign_keys.map((fk) => ({
      from_table: qualifiedName(t),
      from_columns: fk.columns,
      to_table: `${fk.references.schema}.${fk.references.table}`,
      to_columns: fk.references.columns,
      kind: "declared" as const,
      confidence: 1,
      reason: fk.name === null ? "foreign key" : `foreign key ${fk.name}`
    }))
  )

/**
 * Keys no constraint declares, read from names and types: `orders.customer_id` → `customers.id`
 * when `customers` has a single-column key of the same type family. Same-schema targets are
 * surer than others; a column already covered by a declared key is left alone.
 */
const inferred = (tables: ReadonlyArray<TableInfo>, known: ReadonlySet<string>): Array<Relationship> => {
  const byStem = new Map<string, Array<TableInfo>>()
  for (const t of tables) {
    const s = stem(t.name.toLowerCase())
    byStem.set(s, [...(byStem.get(s) ?? []), t])
  }
  const found: Array<Relationship> = []
  for (const t of tables) {
    for (const c of t.columns) {
      if (c.primary_key && t.primary_key.length === 1) continue
      if (known.has(`${qualifiedName(t)}.${c.name}`)) continue
      const target = referencedStem(c.name)
      if (target === undefined) continue
      const candidates = (byStem.get(target) ?? []).filter((x) => x !== t)
      const sameSchema = candidates.filter((x) => x.schema === t.schema)
      for (const to of sameSchema.length > 0 ? sameSchema : candidates) {
        const key = keyColumn(to)
        if (key === undefined || typeFamily(key.type) !== typeFamily(c.type)) continue
        found.push({
          from_table: qualifiedName(t),
          from_columns: [c.name],
          to_table: qualifiedName(to),
          to_columns: [key.name],
          kind: "inferred",
          confidence: to.schema === t.schema ? 0.9 : 0.7,
          reason: `${c.name} names ${to.name} and matches the type of its key ${key.name}`
        })
      }
    }
  }
  return found
}

/** Declared foreign keys, plus inferred ones when asked. */
export const relationshipsOf = (tables: ReadonlyArray<TableInfo>, includeInferred: boolean): Array<Relationship> => {
  const keys = declared(tables)
  if (!includeInferred) return keys
  const known = new Set(keys.flatMap((r) => r.from_columns.map((c) => `${r.from_table}.${c}`)))
  return [...keys, ...inferred(tables, known)]
}

export interface JoinStep {
  readonly from: string
  readonly to: string
  readonly on: string
  readonly kind: Relationship["kind"]
}

export interface JoinPath {
  readonly tables: ReadonlyArray<string>
  readonly hops: number
  readonly joins: ReadonlyArray<JoinStep>
  readonly confidence: number
  readonly sql: string
}

const onClause = (r: Relationship) => r.from_columns.map((c, i) => `${r.from_table}.${c} = ${r.to_table}.${r.to_columns[i] ?? "?"}`).join(" AND ")

const MAX_PATHS = 10
const MAX_EXPANSIONS = 50_000

/** The shortest join paths (up to ten, at most `maxHops` joins) between two tables, each with its JOIN clauses. */
export const joinPaths = (relationships: ReadonlyArray<Relationship>, from: string, to: string, maxHops: number): Array<JoinPath> => {
  const edges = new Map<string, Array<{ next: string; via: Relationship }>>()
  const link = (a: string, b: string, via: Relationship) => edges.set(a, [...(edges.get(a) ?? []), { next: b, via }])
  for (const r of relationships) {
    if (r.from_table === r.to_table) continue
    link(r.from_table, r.to_table, r)
    link(r.to_table, r.from_table, r)
  }
  // Hops from each table to the target, so the search never walks a branch that cannot arrive in time.
  const distance = new Map<string, number>([[to, 0]])
  const queue = [to]
  while (queue.length > 0) {
    const table = queue.shift()!
    for (const { next } of edges.get(table) ?? []) {
      if (!distance.has(next)) {
        distance.set(next, distance.get(table)! + 1)
        queue.push(next)
      }
    }
  }
  const found: Array<{ tables: Array<string>; steps: Array<Relationship> }> = []
  let expansions = 0
  const walk = (table: string, tables: Array<string>, steps: Array<Relationship>) => {
    if (found.length >= MAX_PATHS * 4 || ++expansions > MAX_EXPANSIONS) return
    if (table === to) {
      found.push({ tables: [...tables], steps: [...steps] })
      return
    }
    for (const { next, via } of edges.get(table) ?? []) {
      const left = distance.get(next)
      if (left === undefined || steps.length + 1 + left > maxHops || tables.includes(next)) continue
      tables.push(next)
      steps.push(via)
      walk(next, tables, steps)
      tables.pop()
      steps.pop()
    }
  }
  if (distance.has(from) && from !== to) walk(from, [from], [])
  return found
    .map(({ tables, steps }) => {
      const confidence = steps.reduce((p, s) => p * s.confidence, 1)
      const joins = steps.map((s, i) => ({ from: tables[i]!, to: tables[i + 1]!, on: onClause(s), kind: s.kind }))
      const sql = [`FROM ${tables[0]}`, ...joins.map((j) => `JOIN ${j.to} ON ${j.on}`)].join("\n")
      return { tables, hops: steps.length, joins, confidence: Math.round(confidence * 1000) / 1000, sql }
    })
    .sort((a, b) => a.hops - b.hops || b.confidence - a.confidence)
    .slice(0, MAX_PATHS)
}
