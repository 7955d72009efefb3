import MiniSearch, { type SearchResult } from "minisearch"
import { qualifiedName, type TableInfo } from "../domain/SchemaSnapshot"
import { PROSE_STOPWORDS, stem, words } from "../domain/Words"

// Words of a question that name no table or column, and words every schema question uses.
const STOPWORDS = new Set([...PROSE_STOPWORDS, ..."list show table tables column columns data".split(" ")])

const processTerm = (term: string): string | null => (STOPWORDS.has(term) ? null : stem(term))

/** Notes a reader added to a table or column (annotations, endorsements), searched with its own words. */
export type Notes = (table: TableInfo, column?: string) => string

interface TableDoc {
  readonly id: number
  readonly name: string
  readonly schema: string
  readonly columns: string
  readonly comment: string
  readonly notes: string
}

/** One column name with its comment and notes, however many tables share it. */
interface ColumnDoc {
  readonly id: number
  readonly name: string
  readonly comment: string
  readonly notes: string
}

const options = <T>(fields: ReadonlyArray<keyof T & string>, boost: Partial<Record<keyof T & string, number>>) => ({
  fields: [...fields],
  tokenize: words,
  processTerm,
  searchOptions: {
    boost,
    prefix: (term: string) => term.length >= 4,
    fuzzy: (term: string) => (term.length >= 6 ? 0.15 : false),
    combineWith: "OR" as const
  }
})

export interface TableHit {
  readonly table: TableInfo
  readonly score: number
  readonly matched: ReadonlyArray<string>
}

export interface ColumnHit {
  readonly table: TableInfo
  readonly column: string
  readonly score: number
}

/**
 * BM25 (MiniSearch) over one snapshot's tables and columns: names split into words, comments and
 * notes. Columns are indexed once per distinct name and comment (schemas repeat `id`, `status`,
 * `created_at` across thousands of tables); which table's column ranks first is decided by how
 * well the table itself matches.
 */
export class SchemaSearch {
  private readonly tables: MiniSearch<TableDoc>
  private readonly columns: MiniSearch<ColumnDoc>
  private readonly owners: Array<Array<{ table: number; column: string }>> = []

  constructor(
    private readonly all: ReadonlyArray<TableInfo>,
    notes: Notes = () => ""
  ) {
    this.tables = new MiniSearch<TableDoc>(options<TableDoc>(["name", "schema", "columns", "comment", "notes"], { name: 4, columns: 1.2, comment: 1, notes: 1.5, schema: 0.5 }))
    this.columns = new MiniSearch<ColumnDoc>(options<ColumnDoc>(["name", "comment", "notes"], { name: 3, comment: 1, notes: 1.5 }))
    this.tables.addAll(
      all.map((t, id) => ({
        id,
        name: t.name,
        schema: t.schema,
        columns: t.columns.map((c) => c.name).join(" "),
        comment: [t.comment ?? "", ...t.columns.map((c) => c.comment ?? "")].join(" "),
        notes: notes(t)
      }))
    )
    const signatures = new Map<string, number>()
    const columnDocs: Array<ColumnDoc> = []
    all.forEach((t, table) =>
      t.columns.forEach((c) => {
        const doc = { name: c.name, comment: c.comment ?? "", notes: notes(t, c.name) }
        const signature = `${doc.name}\u0000${doc.comment}\u0000${doc.notes}`
        let id = signatures.get(signature)
        if (id === undefined) {
          id = columnDocs.length
          signatures.set(signature, id)
          columnDocs.push({ id, ...doc })
          this.owners.push([])
        }
        this.owners[id]!.push({ table, column: c.name })
      })
    )
    this.columns.addAll(columnDocs)
  }

  /** Tables best matching `query`, best first, among those `visible` lets through. */
  searchTables(query: string, limit: number, visible: (t: TableInfo) => boolean = () => true): Array<TableHit> {
    return this.rankTables(query)
      .filter((hit) => visible(hit.table))
      .slice(0, limit)
  }

  /**
   * Tables and columns matching `query`, each list best first, from one table search: a column's
   * own match decides its place, and its table's match orders the tables sharing it.
   */
  search(query: string, limits: { readonly tables: number; readonly columns: number }, visible: (t: TableInfo) => boolean = () => true) {
    const ranked = this.rankTables(query)
    return { tables: ranked.filter((hit) => visible(hit.table)).slice(0, limits.tables), columns: this.rankColumns(query, ranked, limits.columns, visible) }
  }

  private rankTables(query: string): Array<TableHit & { readonly id: number }> {
    return this.tables.search(query).map((r: SearchResult) => ({ id: r.id as number, table: this.all[r.id as number]!, score: r.score, matched: r.terms }))
  }

  private rankColumns(query: string, tables: ReadonlyArray<{ readonly id: number; readonly score: number }>, limit: number, visible: (t: TableInfo) => boolean) {
    const docs = this.columns.search(query)
    if (docs.length === 0) return []
    const tableScore = new Map<number, number>()
    let best = 1
    for (const t of tables) {
      tableScore.set(t.id, t.score)
      if (t.score > best) best = t.score
    }
    const hits: Array<ColumnHit> = []
    for (const doc of docs) {
      // The `limit` owners whose tables match best, kept in order without sorting them all.
      const top: Array<{ table: number; column: string; tableScore: number }> = []
      for (const owner of this.owners[doc.id as number]!) {
        const score = tableScore.get(owner.table) ?? 0
        if (top.length === limit && score <= top[limit - 1]!.tableScore) continue
        if (!visible(this.all[owner.table]!)) continue
        let at = top.length
        while (at > 0 && top[at - 1]!.tableScore < score) at--
        top.splice(at, 0, { table: owner.table, column: owner.column, tableScore: score })
        if (top.length > limit) top.pop()
      }
      // A column's own match decides; its table's match (scaled below one point) only orders equals.
      for (const o of top) hits.push({ table: this.all[o.table]!, column: o.column, score: doc.score + o.tableScore / best / 2 })
    }
    return hits.sort((a, b) => b.score - a.score).slice(0, limit)
  }
}

/** A table hit as the search route and tool report it. */
export const tableHitJson = (hit: TableHit) => ({
  table: qualifiedName(hit.table),
  kind: hit.table.kind,
  score: hit.score,
  matched_terms: hit.matched,
  comment: hit.table.comment,
  row_estimate: hit.table.row_estimate,
  columns: hit.table.columns.map((c) => c.name)
})

/** A column hit as the search route and tool report it: the column with its type, comment and keys. */
export const columnHitJson = (hit: ColumnHit) => ({
  table: qualifiedName(hit.table),
  column: hit.table.columns.find((c) => c.name === hit.column)!,
  score: hit.score
})
