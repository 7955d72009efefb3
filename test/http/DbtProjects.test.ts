import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DbtProjects } from "../../src/services/DbtProjects"
import { git } from "../support/Git"
import { request, type RequestOptions } from "../support/Http"
import { localOperator, startInProcess } from "../support/InProcess"

const FIXTURE = path.join(import.meta.dirname, "..", "fixtures", "dbt", "jaffle")

describe("dbt projects: folders and workspace repositories, scanned (issue 30)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let root: string
  let outside: string
  let writer: string
  let reader: string

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-projects-"))
    outside = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-outside-"))
    fs.cpSync(FIXTURE, path.join(root, "jaffle"), { recursive: true })
    fs.writeFileSync(path.join(outside, "secret.sql"), "select 'the gateway host''s secret'")
    // Links out of the root: neither a model nor a folder to register.
    fs.symlinkSync(path.join(outside, "secret.sql"), path.join(root, "jaffle", "models", "staging", "stg_secret.sql"))
    fs.symlinkSync(outside, path.join(root, "escape"))
    gateway = await startInProcess({ SP_PROJECT_ROOTS: root })
    writer = await gateway.keyWith(["read", "write"])
    reader = await gateway.keyWith(["read"])
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    for (const dir of [root, outside]) if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: writer, ...options })

  it("scans a folder: models by layer, sources, tests, lineage; links out of the folder are neither listed nor read", async () => {
    const created = await api("/api/projects", { body: { name: "jaffle", path: "jaffle", description: "the shop" } })
    expect(created.status, created.text).toBe(201)
    expect(created.json).toMatchObject({ name: "jaffle", source: "directory", path: fs.realpathSync(path.join(root, "jaffle")), scan_error: null })
    expect(created.json.counts).toEqual({ models: 5, staging: 2, intermediate: 1, marts: 2, other: 0, sources: 2, tests: 4 })
    const scan = created.json.scan
    expect(scan).toMatchObject({ project_name: "jaffle_shop", model_paths: ["models"], from_manifest: false })
    expect(scan.models.find((m: { name: string }) => m.name === "int_orders_joined")).toMatchObject({ layer: "intermediate", refs: ["stg_orders", "stg_customers"] })
    expect(scan.models.find((m: { name: string }) => m.name === "fct_orders")).toMatchObject({ layer: "marts", materialized: "incremental" })
    expect(scan.models.find((m: { name: string }) => m.name === "stg_orders")).toMatchObject({ sources: ["raw.orders"] })
    expect(JSON.stringify(scan)).not.toMatch(/stg_secret|gateway host/)

    const lineage = await gateway.runtime.runPromise(Effect.flatMap(DbtProjects, (p) => p.lineage(localOperator, "jaffle", "int_orders_joined")))
    expect(lineage).toMatchObject({ upstream: ["stg_orders", "stg_customers"], downstream: ["fct_orders"], sources: ["raw.customers", "raw.orders"] })

    const mcp = new Client({ name: "dbt-test", version: "1.0.0" })
    await mcp.connect(new StreamableHTTPClientTransport(new URL("/mcp", gateway.url), { requestInit: { headers: { "x-api-key": reader } } }))
    const marts = await mcp.callTool({ name: "dbt_models", arguments: { project: "jaffle", layer: "marts" } })
    expect((marts.content as Array<{ text: string }>)[0]!.text).toMatch(/5 models \(2 staging, 1 intermediate, 2 marts, 0 other\)[\s\S]*- dim_customers \[marts\][\s\S]*- fct_orders \[marts, incremental\] models\/marts\/fct_orders.sql ← int_orders_joined/)
    const traced = await mcp.callTool({ name: "dbt_lineage", arguments: { project: "jaffle", model: "fct_orders" } })
    expect((traced.content as Array<{ text: string }>)[0]!.text).toContain("upstream: int_orders_joined, stg_orders, stg_customers")
    await mcp.close()

    expect((await request(gateway.url, "/api/projects", { key: reader })).json.items).toEqual([expect.objectContaining({ name: "jaffle", counts: expect.objectContaining({ marts: 2 }) })])
    expect((await request(gateway.url, "/api/projects", { key: reader, body: { name: "x", path: "jaffle" } })).status).toBe(403)

    // dbt's compiled manifest, when there is one, says what the models are.
    fs.mkdirSync(path.join(root, "jaffle", "target"))
    const manifest = {
      nodes: {
        "model.jaffle_shop.stg_orders": { resource_type: "model", name: "stg_orders", original_file_path: "models/staging/stg_orders.sql", config: { materialized: "view" }, depends_on: { nodes: ["source.jaffle_shop.raw.orders"] } },
        "model.jaffle_shop.orders": { resource_type: "model", name: "orders", original_file_path: "models/marts/orders.sql", config: { materialized: "table" }, depends_on: { nodes: ["model.jaffle_shop.stg_orders"] } },
        "test.jaffle_shop.unique_orders_order_id.abc": { resource_type: "test", name: "unique_orders_order_id", test_metadata: { name: "unique" }, depends_on: { nodes: ["model.jaffle_shop.orders"] } }
      },
      sources: { "source.jaffle_shop.raw.orders": { source_name: "raw", name: "orders", schema: "raw" } }
    }
    fs.writeFileSync(path.join(root, "jaffle", "target", "manifest.json"), JSON.stringify(manifest))
    const rescanned = await api("/api/projects/jaffle/scan", { method: "POST" })
    expect(rescanned.json.scan).toMatchObject({ from_manifest: true, counts: { models: 2, staging: 1, marts: 1, sources: 1, tests: 1 } })
    expect(rescanned.json.scan.models.find((m: { name: string }) => m.name === "orders")).toMatchObject({ refs: ["stg_orders"] })

    expect((await api("/api/projects/jaffle", { method: "DELETE" })).json).toEqual({ name: "jaffle", deleted: true })
    expect((await api("/api/projects/jaffle")).status).toBe(404)
  })

  it("refuses folders outside SP_PROJECT_ROOTS, through links or .., and browses only inside them", async () => {
    for (const given of ["/etc", outside, "../", "jaffle/../../", "escape", path.join(root, "escape"), "missing"]) {
      const refused = await api("/api/projects", { body: { name: "bad", path: given } })
      expect([given, refused.status, refused.json.code]).toEqual([given, 400, "invalid_request"])
    }
    expect((await api("/api/projects", { body: { name: "both", path: "jaffle", workspace_project_id: `wsp_${"0".repeat(32)}` } })).status).toBe(400)
    expect((await api("/api/projects", { body: { name: "neither" } })).status).toBe(400)

    expect((await api("/api/files/browse")).json).toEqual({ path: null, entries: [{ name: root, kind: "directory", size: null }], dbt_project: false })
    const listed = await api(`/api/files/browse?path=${encodeURIComponent("jaffle")}`)
    expect(listed.json).toMatchObject({ dbt_project: true })
    expect(listed.json.entries.map((e: { name: string }) => e.name)).toEqual(expect.arrayContaining(["models", "tests", "dbt_project.yml"]))
    expect((await api(`/api/files/browse`)).status).toBe(200)
    const top = await api(`/api/files/browse?path=${encodeURIComponent(root)}`)
    expect(top.json.entries).toEqual(expect.arrayContaining([{ name: "escape", kind: "symlink", size: null }]))
    for (const given of ["/etc", "escape", "../..", outside]) {
      expect([given, (await api(`/api/files/browse?path=${encodeURIComponent(given)}`)).status]).toEqual([given, 400])
    }
    expect((await request(gateway.url, "/api/files/browse", { key: reader })).status).toBe(403)
  })

  it("scans a workspace project's repository at its default branch, without a checkout", async () => {
    const workspace = (await api("/api/workspace-projects", { body: { name: "shop" } })).json
    const before = await api("/api/projects", { body: { name: "shop", workspace_project_id: workspace.id, subdirectory: "transform" } })
    expect(before.status).toBe(201)
    expect(before.json).toMatchObject({ source: "workspace", scan: null, scan_error: expect.stringMatching(/no commits on main/) })

    const work = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-shop-"))
    try {
      fs.cpSync(FIXTURE, path.join(work, "transform"), { recursive: true })
      await git(["init", "."], work)
      await git(["add", "."], work)
      await git(["commit", "-m", "dbt project"], work)
      const pushed = await git(["push", `${gateway.url.replace("http://", `http://git:${writer}@`)}/git/${workspace.id}.git`, "main"], work)
      expect(pushed.code, pushed.stderr).toBe(0)
    } finally {
      fs.rmSync(work, { recursive: true, force: true })
    }
    const scanned = await api("/api/projects/shop/scan", { method: "POST" })
    expect(scanned.json).toMatchObject({ scan_error: null, counts: { models: 5, staging: 2, intermediate: 1, marts: 2, other: 0, sources: 2, tests: 4 } })
  })
})
