import type { ColumnInfo, TableInfo } from "../domain/SchemaSnapshot"
import { qualifiedName } from "../domain/SchemaSnapshot"
import type { Relationship } from "./Relationships"
import { stem, words } from "../domain/Words"

/** `order_items` → `order item`: what one row of a table is. */
export const entityOf = (table: string) => words(table).map(stem).join(" ")

const phrase = (name: string) => words(name).join(" ")

const VERBS: Record<string, string> = {
  created: "created",
  updated: "last updated",
  deleted: "deleted",
  modified: "last modified",
  started: "started",
  ended: "ended",
  closed: "closed",
  opened: "opened",
  paid: "paid",
  shipped: "shipped",
  delivered: "delivered",
  cancelled: "cancelled",
  canceled: "cancelled"
}

/**
 * A one-line description of a column from its name, type, keys and statistics: deterministic rules
 * that say what a careful reader of the schema would, for columns nobody has described.
 */
export const describeColumn = (table: TableInfo, column: ColumnInfo, relationships: ReadonlyArray<Relationship>) => {
  const entity = entityOf(table.name)
  const name = column.name.toLowerCase()
  const key = relationships.find((r) => r.from_table === qualifiedName(table) && r.from_columns.length === 1 && r.from_columns[0] === column.name)
  const base = (() => {
    if (column.primary_key && table.primary_key.length === 1) return `Unique identifier of the ${entity}`
    if (key !== undefined) {
      const target = entityOf(key.to_table.split(".").at(-1)!)
      const arrow = `(${key.kind === "inferred" ? "likely " : ""}→ ${key.to_table}.${key.to_columns[0]})`
      // A key to the table itself (manager_id) is named by its column.
      return target === entity ? `The ${phrase(name.replace(/_?id$/, ""))} of this ${entity} ${arrow}` : `The ${target} this ${entity} refers to ${arrow}`
    }
    const at = /^(.*?)_?(at|on|time|timestamp|date)$/.exec(name)
    if (at !== null && at[1] !== "" && /date|time/i.test(column.type)) {
      const verb = VERBS[at[1]!] ?? (at[1]!.endsWith("ed") ? phrase(at[1]!) : undefined)
      return verb === undefined ? `${capitalize(phrase(at[1]!))} ${at[2] === "date" ? "date" : "time"} of the ${entity}` : `When the ${entity} was ${verb}`
    }
    const flag = /^(is|has|can|was)_(.+)$/.exec(name)
    if (flag !== null || /bool/i.test(column.type)) return `Whether the ${entity} ${flag === null ? `is ${phrase(name)}` : `${flag[1]} ${phrase(flag[2]!)}`}`
    if (/(^|_)(count|num)(_|$)/.test(name)) return `Number of ${phrase(name.replace(/(^|_)(count|num)(_|$)/, " ").trim()) || "items"} of the ${entity}`
    if (/email/.test(name)) return `Email address of the ${entity}`
    if (/phone/.test(name)) return `Phone number of the ${entity}`
    if (/(amount|price|total|cost|revenue|balance|fee)/.test(name)) return `${capitalize(phrase(name))} of the ${entity} (${column.type})`
    if (/status|state|type|kind|category/.test(name)) return `${capitalize(phrase(name))} of the ${entity}`
    return `${capitalize(phrase(name))} of the ${entity}`
  })()
  const few = column.distinct_estimate !== null && column.distinct_estimate > 0 && column.distinct_estimate <= 20 && !column.primary_key
  return few ? `${base}; one of about ${Math.round(column.distinct_estimate!)} values` : base
}

const capitalize = (text: string) => (text.length === 0 ? text : text[0]!.toUpperCase() + text.slice(1))

/** A table's description: what one row is, and what it links to and from. */
export const describeTable = (table: TableInfo, relationships: ReadonlyArray<Relationship>) => {
  const name = qualifiedName(table)
  const outgoing = [...new Set(relationships.filter((r) => r.from_table === name && r.to_table !== name).map((r) => r.to_table))]
  const incoming = [...new Set(relationships.filter((r) => r.to_table === name && r.from_table !== name).map((r) => r.from_table))]
  const kind = table.kind === "view" || table.kind === "materialized_view" ? "A view" : "A table"
  return [
    `${kind} of ${entityOf(table.name)} records, one per row`,
    ...(outgoing.length > 0 ? [`each linked to ${outgoing.join(", ")}`] : []),
    ...(incoming.length > 0 ? [`referenced by ${incoming.join(", ")}`] : [])
  ].join("; ")
}
