import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const REPO_ROOT = path.resolve(import.meta.dirname, "../..")

/**
 * The layers of the house, lowest first (DESIGN.md §2). A module may import its own folder and any
 * folder below it; folders on one level do not import each other. `web` is the browser app: it
 * sees the contract (api, domain) and nothing else of the server.
 */
const LEVELS: ReadonlyArray<ReadonlyArray<string>> = [
  ["src/domain"],
  ["src/api", "src/migrations"],
  ["src/repos"],
  ["layers"],
  ["src/schema"],
  ["src/governance"],
  ["src/jobs"],
  ["src/services"],
  ["src/gate"],
  ["src/tools"],
  ["src/http", "src/mcp", "src/dbt"],
  ["actors"],
  ["app"],
  ["src/cli"],
  ["src/main.ts"]
]
const WEB = "src/web"

const folderOf = (file: string): string => {
  if (file.startsWith(`${WEB}/`)) return WEB
  const found = LEVELS.flat().find((folder) => file === folder || file.startsWith(`${folder}/`))
  if (found === undefined) throw new Error(`${file} is in no level of the architecture: add its folder to LEVELS`)
  return found
}
const levelOf = (folder: string) => LEVELS.findIndex((level) => level.includes(folder))

const sourceFiles = (): ReadonlyArray<string> =>
  ["src", "layers", "actors", "app"].flatMap((dir) =>
    fs
      .readdirSync(path.join(REPO_ROOT, dir), { recursive: true, encoding: "utf8" })
      .map((file) => path.join(dir, file))
      .filter((file) => /\.(ts|tsx|mjs)$/.test(file) && !file.endsWith(".d.ts"))
  )

// Static imports and re-exports (type-only ones too: a type import is a dependency of the design), and dynamic import().
const IMPORT = /(?:import|export)\s[^"';]*?from\s+["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)|import\s+["'](\.{1,2}\/[^"']+)["']/g

const resolveImport = (from: string, spec: string): string | null => {
  const base = path.normalize(path.join(path.dirname(from), spec))
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}.mjs`, path.join(base, "index.ts")]) {
    const full = path.join(REPO_ROOT, candidate)
    if (fs.existsSync(full) && fs.statSync(full).isFile()) return candidate
  }
  return null
}

const unresolved: Array<string> = []
const importGraph = (): ReadonlyMap<string, ReadonlyArray<string>> =>
  new Map(
    sourceFiles().map((file) => {
      const text = fs.readFileSync(path.join(REPO_ROOT, file), "utf8")
      const targets = [...text.matchAll(IMPORT)].flatMap((m) => {
        const spec = (m[1] ?? m[2] ?? m[3])!
        const target = resolveImport(file, spec)
        if (target === null && !/\.(css|svg|png|json)$/.test(spec)) unresolved.push(`${file} → ${spec}`)
        return target === null ? [] : [target]
      })
      return [file, targets] as const
    })
  )

/** Circles of files (strongly connected components of more than one file, or a file importing itself). */
const circles = (graph: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (file: string) => {
    index.set(file, counter)
    low.set(file, counter++)
    stack.push(file)
    onStack.add(file)
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(file, Math.min(low.get(file)!, low.get(next)!))
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!))
    }
    if (low.get(file) === index.get(file)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== file)
      if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort())
    }
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return found
}

describe("the architecture: imports run down the layers, never in a circle", () => {
  const graph = importGraph()

  it("no module imports a folder above its own, or a folder beside it", () => {
    const upward: Array<string> = []
    for (const [file, targets] of graph) {
      const from = folderOf(file)
      for (const target of targets) {
        const to = folderOf(target)
        if (to === from) continue
        const allowed = from === WEB ? ["src/api", "src/domain"].includes(to) : to !== WEB && levelOf(to) < levelOf(from)
        if (!allowed) upward.push(`${file} → ${target}`)
      }
    }
    expect(upward).toEqual([])
  })

  it("no files import each other in a circle", () => {
    expect(graph.size).toBeGreaterThan(200)
    expect(circles(graph)).toEqual([])
  })

  it("reads the imports it judges: every relative import resolves to a file, and a known downward one is seen", () => {
    expect(unresolved).toEqual([])
    expect(graph.get("src/services/ApiKeys.ts")).toContain("src/repos/ApiKeysRepo.ts")
  })
})
