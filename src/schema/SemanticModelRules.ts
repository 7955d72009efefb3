import type { SemanticModelDocument, SemanticModelEntry } from "../domain/SemanticModel"
import type { TableInfo } from "../domain/SchemaSnapshot"
import { qualifiedName } from "../domain/SchemaSnapshot"
import { describeTable, entityOf } from "./AnnotationRules"
import type { Relationship } from "./Relationships"

const snake = (text: string) => text.replace(/[^a-z0-9]+/gi, "_").replace(/^_|_$/g, "").toLowerCase().slice(0, 128) || "x"
const NUMERIC = /int|numeric|decimal|number|float|double|real|money/i
const TIME = /date|time/i
const FREE_TEXT = /(description|note|comment|body|message)/i
const OPAQUE = /json|blob|bytea|binary|xml|array|\[\]/i

/** A semantic model drafted from the schema: keys as entities, text and time columns as dimensions, numbers as measures. */
export const draftSemanticModel = (tables: ReadonlyArray<TableInfo>, relationships: ReadonlyArray<Relationship>): SemanticModelDocument => ({
  semantic_models: tables.map((table): SemanticModelEntry => {
    const name = qualifiedName(table)
    const keys = relationships.filter((r) => r.from_table === name && r.from_columns.length === 1)
    const keyColumns = new Set([...table.primary_key, ...keys.map((k) => k.from_columns[0]!)])
    const taken = new Set<string>()
    // Names are unique within a model: a second use gets a suffix.
    const unique = (wanted: string) => {
      let name = wanted
      for (let n = 2; taken.has(name); n++) name = `${wanted}_${n}`
      taken.add(name)
      return name
    }
    const primary = table.primary_key.length === 1 ? [{ name: unique(snake(entityOf(table.name))), type: "primary" as const, expr: table.primary_key[0]! }] : []
    // A key to the table itself (manager_id) is named after its column, not the entity it shares with the primary key.
    const foreign = keys.map((k) => {
      const target = snake(entityOf(k.to_table.split(".").at(-1)!))
      const column = k.from_columns[0]!
      return { name: unique(taken.has(target) ? snake(column.replace(/_?id$/i, "")) : target), type: "foreign" as const, expr: column }
    })
    const rest = table.columns.filter((c) => !keyColumns.has(c.name) && !/(^|_)id$/i.test(c.name))
    return {
      name: snake(table.name),
      model: name,
      description: table.comment ?? describeTable(table, relationships),
      entities: [...primary, ...foreign],
      dimensions: rest
        .filter((c) => TIME.test(c.type) || (!NUMERIC.test(c.type) && !FREE_TEXT.test(c.name) && !OPAQUE.test(c.type)))
        .map((c) =>
          TIME.test(c.type)
            ? { name: unique(snake(c.name)), type: "time" as const, expr: c.name, time_granularity: "day" as const }
            : { name: unique(snake(c.name)), type: "categorical" as const, expr: c.name }
        ),
      measures: [
        { name: unique(`${snake(table.name)}_count`), agg: "count" as const, expr: table.primary_key.length === 1 ? table.primary_key[0]! : "1" },
        ...rest.filter((c) => NUMERIC.test(c.type) && !TIME.test(c.type)).map((c) => ({ name: unique(`total_${snake(c.name)}`), agg: "sum" as const, expr: c.name }))
      ]
    }
  })
})

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/

/** What is wrong with a model against the schema: unknown tables, unknown columns, repeated names. */
export const semanticModelProblems = (document: SemanticModelDocument, tables: ReadonlyArray<TableInfo>): Array<string> => {
  const byName = new Map(tables.map((t) => [qualifiedName(t).toLowerCase(), t]))
  const problems: Array<string> = []
  const models = new Set<string>()
  for (const entry of document.semantic_models) {
    if (models.has(entry.name)) problems.push(`semantic model "${entry.name}" is defined twice`)
    models.add(entry.name)
    const table = byName.get(entry.model.toLowerCase())
    if (table === undefined) {
      problems.push(`${entry.name}: no table ${entry.model} on this connection`)
      continue
    }
    const columns = new Set(table.columns.map((c) => c.name.toLowerCase()))
    const names = new Set<string>()
    for (const item of [...entry.entities, ...entry.dimensions, ...entry.measures]) {
      if (names.has(item.name)) problems.push(`${entry.name}: "${item.name}" is defined twice`)
      names.add(item.name)
      if (IDENTIFIER.test(item.expr) && !columns.has(item.expr.toLowerCase())) problems.push(`${entry.name}.${item.name}: no column ${item.expr} in ${entry.model}`)
    }
  }
  return problems
}
