import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Either } from "effect"
import type { ToolFailure, ToolOutput } from "../tools/ToolDefinition"

/** A tool call's outcome as MCP's tools/call result: the output's text and structured content, or a tool error naming its code. */
export const callToolResult: (outcome: Either.Either<ToolOutput, ToolFailure>) => CallToolResult = Either.match({
  onLeft: (failure) => ({ content: [{ type: "text", text: `${failure.code}: ${failure.message}` }], isError: true }),
  onRight: (output) => ({
    content: [{ type: "text", text: output.text }],
    ...(output.structured !== undefined ? { structuredContent: output.structured } : {})
  })
})
