import { Effect } from "effect"
import type { McpTool } from "./McpTool"
import { connectionTools } from "./tools/ConnectionTools"
import { exploreTools } from "./tools/ExploreTools"
import { governanceTools } from "./tools/GovernanceTools"
import { queryTools } from "./tools/QueryTools"
import { schemaTools } from "./tools/SchemaTools"

/** The lean set (`/mcp?tools=core`), for clients that pay for every tool description in their context. */
export const CORE_TOOLS: ReadonlySet<string> = new Set(["list_connections", "schema_search", "describe_table", "query_database"])

/**
 * The MCP tool catalogue: each tool with the scope a key needs for it, its schemas and annotations,
 * and its implementation over the same services as REST (every row through the governed executor).
 */
export class McpTools extends Effect.Service<McpTools>()("sluice/McpTools", {
  effect: Effect.gen(function* () {
    const tools: ReadonlyArray<McpTool> = [
      ...(yield* connectionTools),
      ...(yield* schemaTools),
      ...(yield* exploreTools),
      ...(yield* queryTools),
      ...(yield* governanceTools).tools
    ]
    return { tools, byName: new Map(tools.map((t) => [t.name, t])) } as const
  })
}) {}
