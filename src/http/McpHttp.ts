import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { mcpClientConfig } from "../domain/McpClientConfig"
import { originReached } from "./OriginReached"

export const McpHttp = HttpApiBuilder.group(SluiceApi, "mcp", (handlers) =>
  handlers.handle("clientConfig", ({ urlParams }) =>
    Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      const url = `${originReached(request)}/mcp${urlParams.tools === "core" ? "?tools=core" : ""}`
      return mcpClientConfig(urlParams.client, url)
    })
  )
)
