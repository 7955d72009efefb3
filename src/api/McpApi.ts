import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { McpClientConfig, McpClientConfigParams } from "../domain/McpClientConfig"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

export class McpApi extends HttpApiGroup.make("mcp")
  .add(
    HttpApiEndpoint.get("clientConfig", "/mcp/client-config")
      .setUrlParams(McpClientConfigParams)
      .addSuccess(McpClientConfig)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Get an MCP client configuration",
          "The snippet that points an MCP client (Claude Code, Claude Desktop, Cursor or VS Code) at this gateway's `/mcp` endpoint: a file and its content, or a command, with a placeholder where the API key goes. `tools=core` gives the client the lean tool set."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Helpers for connecting MCP clients; the MCP endpoint itself is served at `/mcp`, outside this document.") {}
