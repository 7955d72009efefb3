import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { mcpClientConfig } from "../domain/McpClientConfig"

export const McpHttp = HttpApiBuilder.group(SluiceApi, "mcp", (handlers) =>
  handlers.handle("clientConfig", ({ urlParams }) =>
    Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      // The Host the caller reached (the pipeline has already checked it against SP_ALLOWED_HOSTS).
      const scheme = request.headers["x-forwarded-proto"] === "https" ? "https" : "http"
      const url = `${scheme}://${request.headers["host"] ?? "localhost:3300"}/mcp${urlParams.tools === "core" ? "?tools=core" : ""}`
      return mcpClientConfig(urlParams.client, url)
    })
  )
)
