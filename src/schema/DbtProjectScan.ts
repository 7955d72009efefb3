import { parse as parseYaml } from "yaml"
import type { DbtLayer, DbtModel, DbtProjectScan, DbtSource, DbtTest, ProjectFiles } from "../domain/DbtProject"

const YAML_MAX_BYTES = 1024 * 1024
const SQL_MAX_BYTES = 1024 * 1024
const MANIFEST_MAX_BYTES = 64 * 1024 * 1024

const REF = /\bref\(\s*(?:['"]([\w.-]+)['"]\s*,\s*)?['"]([\w.-]+)['"]\s*(?:,\s*v(?:ersion)?\s*=\s*[^)]*)?\)/g
const SOURCE = /\bsource\(\s*['"]([\w.-]+)['"]\s*,\s*['"]([\w.-]+)['"]\s*\)/g
const MATERIALIZED = /materialized\s*=\s*['"](\w+)['"]/

/** A model's layer: its folder (staging, intermediate, marts) or, failing that, its name's prefix (stg_, int_, fct_/dim_). */
export const layerOf = (path: string, name: string): DbtLayer => {
  const folders = path.toLowerCase().split("/").slice(0, -1)
  if (folders.includes("staging")) return "staging"
  if (folders.includes("intermediate")) return "intermediate"
  if (folders.includes("marts") || folders.includes("mart")) return "marts"
  const lower = name.toLowerCase()
  if (lower.startsWith("stg_")) return "staging"
  if (lower.startsWith("int_")) return "intermediate"
  if (lower.startsWith("fct_") || lower.startsWith("dim_") || lower.startsWith("mart_")) return "marts"
  return "other"
}

const asRecord = (value: unknown): Record<string, unknown> => (typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {})
const asArray = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
const asStrings = (value: unknown): ReadonlyArray<string> => asArray(value).filter((v): v is string => typeof v === "string")

const readYaml = (text: string | null): Record<string, unknown> | null => {
  if (text === null) return null
  try {
    return asRecord(parseYaml(text, { maxAliasCount: 100 }))
  } catch {
    return null
  }
}

const countsOf = (models: ReadonlyArray<DbtModel>, sources: ReadonlyArray<DbtSource>, tests: ReadonlyArray<DbtTest>) => ({
  models: models.length,
  staging: models.filter((m) => m.layer === "staging").length,
  intermediate: models.filter((m) => m.layer === "intermediate").length,
  marts: models.filter((m) => m.layer === "marts").length,
  other: models.filter((m) => m.layer === "other").length,
  sources: sources.length,
  tests: tests.length
})

/** A project from its `target/manifest.json` (what dbt compiled): models with their real dependencies. */
const fromManifest = (manifest: Record<string, unknown>, projectName: string, modelPaths: ReadonlyArray<string>): DbtProjectScan => {
  const nodes = Object.values(asRecord(manifest.nodes)).map(asRecord)
  const nameOf = (id: string) => id.split(".").slice(2).join(".")
  const models: Array<DbtModel> = nodes
    .filter((n) => n.resource_type === "model")
    .map((n) => {
      const path = String(n.original_file_path ?? n.path ?? "")
      const name = String(n.name ?? "")
      const depends = asStrings(asRecord(n.depends_on).nodes)
      return {
        name,
        path,
        layer: layerOf(path, name),
        materialized: typeof asRecord(n.config).materialized === "string" ? String(asRecord(n.config).materialized) : null,
        refs: depends.filter((d) => d.startsWith("model.")).map(nameOf),
        sources: depends.filter((d) => d.startsWith("source.")).map(nameOf)
      }
    })
  const sources: Array<DbtSource> = Object.values(asRecord(manifest.sources))
    .map(asRecord)
    .map((s) => ({ source: String(s.source_name ?? ""), name: String(s.name ?? ""), schema: typeof s.schema === "string" ? s.schema : null }))
  const tests: Array<DbtTest> = nodes
    .filter((n) => n.resource_type === "test")
    .map((n) => ({ name: String(n.name ?? ""), kind: asRecord(n.test_metadata).name === undefined ? "singular" : "generic", model: asStrings(asRecord(n.depends_on).nodes).find((d) => d.startsWith("model."))?.split(".").slice(2).join(".") ?? null }))
  return { project_name: projectName, model_paths: [...modelPaths], from_manifest: true, models, sources, tests, counts: countsOf(models, sources, tests) }
}

/**
 * A dbt project as its files say: `dbt_project.yml` (name, model paths), and `target/manifest.json`
 * when present (models, sources, tests and dependencies as dbt compiled them); otherwise the models
 * tree (each `.sql` a model, its `ref()` and `source()` calls its dependencies) and its YAML files
 * (sources, generic tests) and `tests/` (singular tests). Null where there is no `dbt_project.yml`.
 */
export const scanDbtProject = async (files: ProjectFiles): Promise<DbtProjectScan | null> => {
  const config = readYaml(await files.read("dbt_project.yml", YAML_MAX_BYTES))
  if (config === null) return null
  const projectName = typeof config.name === "string" ? config.name : "unnamed"
  const modelPaths = asStrings(config["model-paths"] ?? config["source-paths"])
  const roots = (modelPaths.length > 0 ? modelPaths : ["models"]).map((p) => p.replace(/^\.\/+|\/+$/g, ""))
  const manifestText = await files.read("target/manifest.json", MANIFEST_MAX_BYTES)
  if (manifestText !== null) {
    try {
      return fromManifest(asRecord(JSON.parse(manifestText)), projectName, roots)
    } catch {
      // A manifest that does not parse is ignored: the models tree still says what there is.
    }
  }
  const all = await files.list()
  const under = (path: string) => roots.some((root) => path.startsWith(`${root}/`))
  const models: Array<DbtModel> = []
  for (const path of all.filter((p) => under(p) && p.endsWith(".sql"))) {
    const sql = (await files.read(path, SQL_MAX_BYTES)) ?? ""
    const name = path.slice(path.lastIndexOf("/") + 1, -4)
    models.push({
      name,
      path,
      layer: layerOf(path, name),
      materialized: MATERIALIZED.exec(sql)?.[1] ?? null,
      refs: [...new Set([...sql.matchAll(REF)].map((m) => m[2]!))],
      sources: [...new Set([...sql.matchAll(SOURCE)].map((m) => `${m[1]}.${m[2]}`))]
    })
  }
  const sources: Array<DbtSource> = []
  const tests: Array<DbtTest> = []
  for (const path of all.filter((p) => under(p) && /\.ya?ml$/.test(p))) {
    const doc = readYaml(await files.read(path, YAML_MAX_BYTES))
    if (doc === null) continue
    for (const source of asArray(doc.sources).map(asRecord)) {
      for (const table of asArray(source.tables).map(asRecord)) {
        sources.push({ source: String(source.name ?? ""), name: String(table.name ?? ""), schema: typeof source.schema === "string" ? source.schema : null })
      }
    }
    for (const model of asArray(doc.models).map(asRecord)) {
      const modelName = String(model.name ?? "")
      const columns = asArray(model.columns).map(asRecord)
      for (const owner of [model, ...columns]) {
        for (const test of [...asArray(owner.tests), ...asArray(owner.data_tests)]) {
          const testName = typeof test === "string" ? test : Object.keys(asRecord(test))[0]
          if (testName !== undefined) tests.push({ name: owner === model ? `${testName}_${modelName}` : `${testName}_${modelName}_${String(owner.name ?? "")}`, kind: "generic", model: modelName })
        }
      }
    }
  }
  for (const path of all.filter((p) => p.startsWith("tests/") && p.endsWith(".sql"))) {
    tests.push({ name: path.slice(path.lastIndexOf("/") + 1, -4), kind: "singular", model: null })
  }
  models.sort((a, b) => a.path.localeCompare(b.path))
  return { project_name: projectName, model_paths: roots, from_manifest: false, models, sources, tests, counts: countsOf(models, sources, tests) }
}
