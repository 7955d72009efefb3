import { execFileSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import { REPO_ROOT } from "../support/Gateway"

interface Tree {
  readonly version?: string
  readonly dependencies?: Record<string, Tree>
}

const effectVersions = (tree: Tree, found = new Set<string>()): Set<string> => {
  for (const [name, child] of Object.entries(tree.dependencies ?? {})) {
    if (name === "effect" && child.version) found.add(child.version)
    effectVersions(child, found)
  }
  return found
}

describe("installed Effect", () => {
  it("is exactly one effect 3.22.x copy (v4 or a duplicate runtime breaks services)", () => {
    const json = execFileSync("npm", ["ls", "effect", "--all", "--json"], { cwd: REPO_ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
    const versions = [...effectVersions(JSON.parse(json) as Tree)]
    expect(versions).toHaveLength(1)
    expect(versions[0]).toMatch(/^3\.22\.\d+$/)
  })
})
