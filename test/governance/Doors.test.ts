import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { REPO_ROOT } from "../support/Gateway"

/** Every TypeScript file of the gateway's own code (not the web app, not the connectors themselves). */
const sources = (dir: string): Array<string> =>
  fs.readdirSync(path.join(REPO_ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => path.join(dir, file))
    .filter((file) => !file.startsWith("src/web/") && !file.startsWith("layers/connectors/"))

// Taking a pool (and so being able to send SQL) is done through these calls of ConnectorPools.
const TAKES_A_POOL = /\b(withPool|poolIn|openOnce|withCheckPool|openTarget)\s*\(/

/** The only doors to a database, and what each sends through it. */
const DOORS: Record<string, string> = {
  "src/governance/GovernedExecutor.ts": "every statement that returns customer rows: checked, policed, capped, masked, audited",
  "src/governance/CatalogReader.ts": "the catalog statements Sluice writes itself: metadata only",
  "src/services/ConnectionChecks.ts": "pings and the connector's privileges probe: no rows"
}

describe("one door for customer data", () => {
  it("no route, tool, service or loop takes a connector pool except the executor, the catalog reader and the connection checks", () => {
    const takers = ["src", "layers", "actors"].flatMap(sources).filter((file) => TAKES_A_POOL.test(fs.readFileSync(path.join(REPO_ROOT, file), "utf8")))
    expect(takers.sort()).toEqual(Object.keys(DOORS).sort())
  })

  it("only Queries runs the executor, so every governed statement resolves the caller's connection, policy and budget first", () => {
    const runners = ["src", "layers", "actors", "app"].flatMap(sources).filter((file) =>
      fs
        .readFileSync(path.join(REPO_ROOT, file), "utf8")
        .split("\n")
        .some((line) => /^import (?!type )\{[^}]*\bGovernedExecutor\b/.test(line))
    )
    expect(runners).toEqual(["src/services/Queries.ts"])
  })

  it("HTTP and MCP code never imports a connector", () => {
    const reaching = ["src/http", "src/mcp"].flatMap(sources).filter((file) =>
      fs
        .readFileSync(path.join(REPO_ROOT, file), "utf8")
        .split("\n")
        .some((line) => /^import (?!type )/.test(line) && /layers\/connectors\/(?!Connectors")/.test(line))
    )
    expect(reaching).toEqual([])
  })
})
