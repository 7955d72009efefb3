import { OpenApi } from "@effect/platform"
import { createConfig, lintFromString } from "@redocly/openapi-core"
import { describe, expect, expectTypeOf, it } from "vitest"
import { SluiceApi } from "../../src/api/Api"
import { QueryStreamLine } from "../../src/api/QueryApi"
import { NDJSON, type QueryStreamPart } from "../../src/domain/Query"

/** The document GET /api/openapi.json serves, built in process from the same HttpApi. */
const spec = OpenApi.fromApi(SluiceApi) as unknown as {
  paths: Record<string, Record<string, { summary?: string; description?: string; responses: Record<string, { content?: Record<string, unknown> }> }>>
  components: { schemas: Record<string, unknown> }
}

const operations = Object.entries(spec.paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation }))
)

describe("the OpenAPI document", () => {
  it("lints clean under Redocly's recommended rules", async () => {
    const config = await createConfig({
      extends: ["recommended"],
      rules: {
        // Sluice has no licence to name yet (package.json is private, the repository has no LICENSE):
        // declaring one would state terms nobody chose. Set it with OpenApi.License in src/api/Api.ts once there is one.
        "info-license": "off"
      }
    })
    const problems = await lintFromString({ source: JSON.stringify(spec), absoluteRef: "openapi.json", config })
    const report = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? "?"}`)
    expect(report).toEqual([])
  })

  it("gives every operation a summary and a description", () => {
    expect(operations.length).toBeGreaterThan(80)
    const undocumented = operations
      .filter(({ operation }) => !operation.summary?.trim() || !operation.description?.trim())
      .map(({ name }) => name)
    expect(undocumented).toEqual([])
  })

  it("documents error bodies as they are sent: a code and a message, no class tag; an undecodable body as invalid_request with its issues", () => {
    const schemas = spec.components.schemas as Record<string, { required?: ReadonlyArray<string>; properties?: Record<string, { enum?: ReadonlyArray<string> }> }>
    const referenced = new Set(
      operations.flatMap(({ operation }) =>
        Object.entries(operation.responses)
          .filter(([status]) => Number(status) >= 400)
          .flatMap(([, response]) => JSON.stringify(response).match(/#\/components\/schemas\/\w+/g) ?? [])
          .map((ref) => ref.split("/").at(-1)!)
      )
    )
    expect(referenced.size).toBeGreaterThan(10)
    for (const name of referenced) {
      const schema = schemas[name]!
      expect([name, Object.keys(schema.properties ?? {}).includes("_tag")]).toEqual([name, false])
      expect([name, ["code", "message"].every((field) => schema.required?.includes(field))]).toEqual([name, true])
    }
    expect(schemas["HttpApiDecodeError"]?.properties?.["code"]?.enum).toEqual(["invalid_request"])
  })

  it("declares the NDJSON form of a query result beside the JSON one", () => {
    const content = spec.paths["/api/query"]?.["post"]?.responses["200"]?.content ?? {}
    expect(Object.keys(content).sort()).toEqual(["application/json", NDJSON])
    expect(content[NDJSON]).toEqual({ schema: { $ref: "#/components/schemas/QueryStreamLine" } })
    expect(spec.components.schemas["QueryStreamLine"]).toBeDefined()
  })
})

// Checked by `npm run check`: every part the handler streams, but a batch of rows (written a line
// per row, each a JSON array), is a line of the documented schema.
expectTypeOf<Exclude<QueryStreamPart, { readonly type: "rows" }>>().toExtend<typeof QueryStreamLine.Type>()
expectTypeOf<ReadonlyArray<unknown>>().toExtend<typeof QueryStreamLine.Type>()
