import type { TableInfo } from "../domain/SchemaSnapshot"
import { qualifiedName } from "../domain/SchemaSnapshot"
import { compactLine, ddlOf, tokenEstimate } from "./SchemaFormats"
import { joinPaths, relationshipsOf } from "./Relationships"
import type { SchemaSearch } from "./SchemaSearch"

export interface LinkedTable {
  readonly table: TableInfo
  readonly score: number
  /** Why it is here: it matched the question, or it joins a table that did. */
  readonly via: "match" | "join"
}

// A neighbour of a matching table is worth this share of that table's score.
const JOIN_SHARE = 0.5
// Only the best matches pull in their neighbours, or a hub table would pull in the whole schema.
const EXPANDED_MATCHES = 3

/**
 * The tables most relevant to a question: BM25 matches, then the tables their foreign keys
 * (declared and inferred) reach in one hop, and any table that bridges two matches, best first.
 */
export const linkTables = (
  tables: ReadonlyArray<TableInfo>,
  search: SchemaSearch,
  visible: (t: TableInfo) => boolean,
  question: string,
  maxTables: number
): Array<LinkedTable> => {
  const linked = new Map<string, LinkedTable>()
  const hits = search.searchTables(question, maxTables * 2, visible)
  for (const hit of hits) linked.set(qualifiedName(hit.table), { table: hit.table, score: hit.score, via: "match" })
  const byName = new Map(tables.map((t) => [qualifiedName(t), t]))
  const relationships = relationshipsOf(tables, true)
  const add = (name: string, score: number) => {
    const table = byName.get(name)
    const current = linked.get(name)
    if (table !== undefined && (current === undefined || current.score < score)) linked.set(name, { table, score, via: current?.via ?? "join" })
  }
  for (const hit of hits.slice(0, EXPANDED_MATCHES)) {
    const name = qualifiedName(hit.table)
    for (const r of relationships) {
      if (r.from_table === name) add(r.to_table, hit.score * JOIN_SHARE * r.confidence)
      if (r.to_table === name) add(r.from_table, hit.score * JOIN_SHARE * r.confidence)
    }
  }
  // A table joining two of the best matches is what a query over both needs.
  const best = hits.slice(0, EXPANDED_MATCHES).map((h) => qualifiedName(h.table))
  for (let i = 0; i < best.length; i++) {
    for (let j = i + 1; j < best.length; j++) {
      const path = joinPaths(relationships, best[i]!, best[j]!, 2)[0]
      for (const middle of path?.tables.slice(1, -1) ?? []) add(middle, Math.min(linked.get(best[i]!)!.score, linked.get(best[j]!)!.score) * JOIN_SHARE)
    }
  }
  return [...linked.values()].sort((a, b) => b.score - a.score).slice(0, maxTables)
}

export type LinkFormat = "ddl" | "compact" | "json"

/** Linked tables rendered in `format`, dropping the least relevant until the text fits `maxTokens`. */
export const renderLinked = (linked: ReadonlyArray<LinkedTable>, format: LinkFormat, maxTokens: number) => {
  const render = (t: TableInfo) => (format === "ddl" ? ddlOf(t) : format === "compact" ? compactLine(t) : JSON.stringify(t))
  const kept: Array<LinkedTable> = []
  const parts: Array<string> = []
  let tokens = 0
  for (const entry of linked) {
    const text = render(entry.table)
    const cost = tokenEstimate(text) + 1
    if (kept.length > 0 && tokens + cost > maxTokens) break
    kept.push(entry)
    parts.push(text)
    tokens += cost
  }
  return { kept, text: parts.join(format === "ddl" ? "\n\n" : "\n"), token_estimate: tokens }
}

/**
 * One prompt-ready block for an agent within `maxTokens`: full DDL for the most relevant tables
 * (those the question links to, or the most connected without one), compact lines for the next,
 * then how they join.
 */
export const agentContext = (
  tables: ReadonlyArray<TableInfo>,
  ranked: ReadonlyArray<TableInfo>,
  options: { readonly header: string; readonly maxTokens: number; readonly fullDdlTables: number }
) => {
  const sections: Array<string> = [options.header]
  let tokens = tokenEstimate(options.header)
  const full: Array<TableInfo> = []
  const brief: Array<TableInfo> = []
  for (const table of ranked) {
    const asDdl = full.length < options.fullDdlTables
    const text = asDdl ? ddlOf(table) : compactLine(table)
    const cost = tokenEstimate(text) + 1
    if (tokens + cost > options.maxTokens) break
    ;(asDdl ? full : brief).push(table)
    tokens += cost
  }
  if (full.length > 0) sections.push(full.map(ddlOf).join("\n\n"))
  if (brief.length > 0) sections.push(`-- More tables (columns only; * primary key, → foreign key):\n${brief.map(compactLine).join("\n")}`)
  const chosen = new Set([...full, ...brief].map(qualifiedName))
  const joins = relationshipsOf(tables, true)
    .filter((r) => chosen.has(r.from_table) && chosen.has(r.to_table))
    .map((r) => `-- ${r.from_table} JOIN ${r.to_table} ON ${r.from_columns.map((c, i) => `${r.from_table}.${c} = ${r.to_table}.${r.to_columns[i] ?? "?"}`).join(" AND ")}${r.kind === "inferred" ? " (inferred)" : ""}`)
  const joinText = joins.length > 0 ? `-- Joins:\n${joins.join("\n")}` : ""
  if (joinText !== "" && tokens + tokenEstimate(joinText) <= options.maxTokens) {
    sections.push(joinText)
    tokens += tokenEstimate(joinText)
  }
  const omitted = ranked.length - full.length - brief.length
  if (omitted > 0) sections.push(`-- ${omitted} more tables left out to stay within ${options.maxTokens} tokens; search for them by name.`)
  const text = sections.join("\n\n")
  return { text, tables: [...chosen], full_ddl_tables: full.length, token_estimate: tokenEstimate(text) }
}
