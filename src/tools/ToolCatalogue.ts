import { Effect } from "effect"
import type { ToolDefinition } from "./ToolDefinition"
import { agentTools } from "./AgentTools"
import { connectionTools } from "./ConnectionTools"
import { exploreTools } from "./ExploreTools"
import { governanceTools } from "./GovernanceTools"
import { knowledgeTools } from "./KnowledgeTools"
import { reportTools } from "./ReportTools"
import { sandboxTools } from "./SandboxTools"
import { queryTools } from "./QueryTools"
import { schemaTools } from "./SchemaTools"
import { workspaceTools } from "./WorkspaceTools"
import { DbBranches } from "../services/DbBranches"
import { DbtProjects } from "../services/DbtProjects"
import { DbtRunTokens } from "../services/DbtRunTokens"
import { WorkspaceProjects } from "../services/WorkspaceProjects"
import { AgentRuns } from "../services/AgentRuns"
import { Audit } from "../services/Audit"
import { Budgets } from "../services/Budgets"
import { ConnectionHealth } from "../services/ConnectionHealth"
import { Connections } from "../services/Connections"
import { Knowledge } from "../services/Knowledge"
import { Queries } from "../services/Queries"
import { Reports } from "../services/Reports"
import { Sandboxes } from "../services/Sandboxes"
import { SchemaChanges } from "../services/SchemaChanges"
import { SchemaContext } from "../services/SchemaContext"
import { SchemaExplorer } from "../services/SchemaExplorer"
import { SchemaRelations } from "../services/SchemaRelations"
import { Schemas } from "../services/Schemas"
import { BranchStatements } from "../services/BranchStatements"
import { branchTools } from "./BranchTools"

/** The lean set (`/mcp?tools=core`), for clients that pay for every tool description in their context. */
export const CORE_TOOLS: ReadonlySet<string> = new Set(["list_connections", "schema_search", "describe_table", "query_database"])

/**
 * The MCP tool catalogue: each tool with the scope a key needs for it, its schemas and annotations,
 * and its implementation over the same services as REST (every row through the governed executor).
 */
export class ToolCatalogue extends Effect.Service<ToolCatalogue>()("sluice/ToolCatalogue", {
  effect: Effect.gen(function* () {
    const tools: ReadonlyArray<ToolDefinition> = [
      ...(yield* connectionTools),
      ...(yield* schemaTools),
      ...(yield* exploreTools),
      ...(yield* queryTools),
      ...(yield* governanceTools).tools,
      ...(yield* knowledgeTools),
      ...(yield* reportTools),
      ...(yield* sandboxTools),
      ...(yield* agentTools),
      ...(yield* workspaceTools),
      ...(yield* branchTools)
    ]
    return { tools, byName: new Map(tools.map((t) => [t.name, t])) } as const
  }),
  dependencies: [AgentRuns.Default, Audit.Default, Budgets.Default, ConnectionHealth.Default, Connections.Default, Knowledge.Default, Queries.Default, Reports.Default, Sandboxes.Default, SchemaChanges.Default, SchemaContext.Default, SchemaExplorer.Default, SchemaRelations.Default, Schemas.Default, WorkspaceProjects.Default, DbtProjects.Default, DbBranches.Default, DbtRunTokens.Default, BranchStatements.Default]
}) {}
