import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { McpClientConfig, McpClientConfigParams } from "../domain/McpClientConfig"
import { RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

/** Helpers for the MCP endpoint (which itself is served at /mcp, outside this contract). */
export class McpApi extends HttpApiGroup.make("mcp")
  .add(
    HttpApiEndpoint.get("clientConfig", "/mcp/client-config")
      .setUrlParams(McpClientConfigParams)
      .addSuccess(McpClientConfig)
      .annotate(RequiredScope, "read")
  )
  .middleware(Authentication)
  .prefix("/api") {}
