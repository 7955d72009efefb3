import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { ProjectFiles } from "../src/domain/DbtProject"

// Folders a scan never walks: tools' own, dbt's installed packages and build output (the manifest is read by name).
const SKIPPED = new Set([".git", "node_modules", "dbt_packages", "dbt_modules", "target", "logs", ".venv", "venv", "__pycache__"])
const MAX_FILES = 20_000

/** Whether `inner` is `outer` or inside it (both resolved). */
export const isInside = (outer: string, inner: string) => inner === outer || inner.startsWith(outer.endsWith(path.sep) ? outer : `${outer}${path.sep}`)

/** The real path of `candidate` when it is inside one of `roots` (symbolic links resolved on both sides), else null. */
export const insideRoots = async (roots: ReadonlyArray<string>, candidate: string): Promise<{ readonly root: string; readonly real: string } | null> => {
  const real = await fs.realpath(candidate).catch(() => null)
  if (real === null) return null
  for (const root of roots) {
    const realRoot = await fs.realpath(root).catch(() => null)
    if (realRoot !== null && isInside(realRoot, real)) return { root: realRoot, real }
  }
  return null
}

/**
 * A project's files in a folder: walked without following symbolic links (a link is neither listed
 * nor read), at most 20,000 files; a read resolves the file and refuses one that lands outside the folder.
 */
export const directoryFiles = (folder: string): ProjectFiles => ({
  list: async () => {
    const found: Array<string> = []
    const walk = async (relative: string): Promise<void> => {
      const entries = await fs.readdir(path.join(folder, relative), { withFileTypes: true }).catch(() => [])
      for (const entry of entries) {
        if (found.length >= MAX_FILES) return
        const child = relative === "" ? entry.name : `${relative}/${entry.name}`
        if (entry.isDirectory() && !SKIPPED.has(entry.name)) await walk(child)
        else if (entry.isFile()) found.push(child)
      }
    }
    await walk("")
    return found
  },
  read: async (relative, maxBytes) => {
    const file = path.join(folder, relative)
    const real = await fs.realpath(file).catch(() => null)
    if (real === null || !isInside(await fs.realpath(folder), real)) return null
    const stat = await fs.lstat(file).catch(() => null)
    if (stat === null || !stat.isFile() || stat.size > maxBytes) return null
    return fs.readFile(real, "utf8")
  }
})

/** One level of a folder under the roots (symbolic links shown, never followed), and whether it holds a dbt project. */
export const browseFolder = async (folder: string) => {
  const entries = await fs.readdir(folder, { withFileTypes: true })
  const listed = await Promise.all(
    entries
      .filter((entry) => !entry.name.startsWith("."))
      .slice(0, 2_000)
      .map(async (entry) => {
        const kind = entry.isSymbolicLink() ? ("symlink" as const) : entry.isDirectory() ? ("directory" as const) : ("file" as const)
        const size = kind === "file" ? ((await fs.lstat(path.join(folder, entry.name)).catch(() => null))?.size ?? null) : null
        return { name: entry.name, kind, size }
      })
  )
  listed.sort((a, b) => (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === "directory" ? -1 : 1))
  return { entries: listed, dbt_project: entries.some((entry) => entry.isFile() && entry.name === "dbt_project.yml") }
}
