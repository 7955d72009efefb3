import { Schema } from "effect"
import type { DbtLayer } from "./DbtProject"

/** At most this many audit rows are read for a run's observed coverage. */
export const COVERAGE_AUDIT_ROWS = 50_000

export const LayerCoverage = Schema.Struct({
  covered: Schema.Int,
  total: Schema.Int,
  /** covered ÷ total in percent; null for a layer with no models. */
  percent: Schema.NullOr(Schema.Number)
})

/** How much of the set's dbt project a run touched: declared by its tasks, or read by its agent. */
export const EvalCoverage = Schema.Struct({
  overall: LayerCoverage,
  staging: LayerCoverage,
  intermediate: LayerCoverage,
  marts: LayerCoverage,
  /** The models covered, by name, and how: a task declares it (`covers`, `builds`), the agent read it, or both. */
  models: Schema.Array(Schema.Struct({ name: Schema.String, declared: Schema.Boolean, observed: Schema.Boolean })),
  /** Audit rows read for the observed part, whether the cap (COVERAGE_AUDIT_ROWS) cut them, and statements that did not parse (counted for nothing). */
  audit_rows_read: Schema.Int,
  audit_rows_capped: Schema.Boolean,
  statements_unparsed: Schema.Int
})
export type EvalCoverage = typeof EvalCoverage.Type

/** A name as coverage matches it: its last dotted segment, lower-cased. */
export const coverageName = (name: string) => (name.split(".").at(-1) ?? name).toLowerCase()

const layer = (covered: number, total: number) => ({ covered, total, percent: total === 0 ? null : Math.round((10_000 * covered) / total) / 100 })

/**
 * Model coverage: (declared ∪ observed) ÷ the project's models, overall and by layer. Declared and
 * observed names match a model by their last dotted segment, lower-cased; a name that is no model
 * (a source, an alias, a CTE that slipped through) counts for nothing.
 */
export const modelCoverage = (
  models: ReadonlyArray<{ readonly name: string; readonly layer: DbtLayer }>,
  declared: Iterable<string>,
  /** Relations read, each as its name's parts (a quoted part may hold a dot: only the last part is its name). */
  observed: Iterable<ReadonlyArray<string>>,
  audit: { readonly rowsRead: number; readonly capped: boolean; readonly unparsed: number }
): EvalCoverage => {
  const layers = new Map(models.map((model) => [coverageName(model.name), model.layer]))
  const declaredNames = new Set([...declared].map(coverageName).filter((name) => layers.has(name)))
  const observedNames = new Set([...observed].map((parts) => (parts.at(-1) ?? "").toLowerCase()).filter((name) => layers.has(name)))
  const covered = [...new Set([...declaredNames, ...observedNames])].sort()
  const inLayer = (wanted: DbtLayer) => [...layers.values()].filter((at) => at === wanted).length
  const coveredIn = (wanted: DbtLayer) => covered.filter((name) => layers.get(name) === wanted).length
  return {
    overall: layer(covered.length, layers.size),
    staging: layer(coveredIn("staging"), inLayer("staging")),
    intermediate: layer(coveredIn("intermediate"), inLayer("intermediate")),
    marts: layer(coveredIn("marts"), inLayer("marts")),
    models: covered.map((name) => ({ name, declared: declaredNames.has(name), observed: observedNames.has(name) })),
    audit_rows_read: audit.rowsRead,
    audit_rows_capped: audit.capped,
    statements_unparsed: audit.unparsed
  }
}
