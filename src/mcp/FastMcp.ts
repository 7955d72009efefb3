import type { IncomingMessage, ServerResponse } from "node:http"
import { HttpServerResponse } from "@effect/platform"
import { isJsonContentType } from "@modelcontextprotocol/sdk/shared/mediaType.js"
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Either, Exit, Runtime, Schema } from "effect"
import { type FastRequest, type HandOff, jsonPost, makeFastAnswers, readJsonBody } from "../gate/FastAnswers"
import { Gate } from "../gate/Gate"
import type { RequestPipeline } from "../gate/RequestPipeline"
import { Connections } from "../services/Connections"
import { Queries } from "../services/Queries"
import { queryOutput } from "../tools/QueryTools"
import { ToolCatalogue } from "../tools/ToolCatalogue"
import { callDecoded, callEnded, childQueryReport, ToolCalls } from "../tools/ToolCalls"
import type { ToolFailure, ToolOutput } from "../tools/ToolDefinition"
import { callToolResult } from "./ToolReplies"

// The message endpoint with either tool set: query_database is in both.
const MCP_ROUTE = /^\/mcp(?:\?tools=(?:all|core))?$/
const TOOL = "query_database"
const MESSAGE_KEYS: ReadonlySet<string> = new Set(["jsonrpc", "id", "method", "params"])

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** A tools/call of query_database as the MCP SDK's server takes it, or undefined for any other message (the SDK's to answer). */
const queryCall = (message: unknown) => {
  if (!isRecord(message) || message["jsonrpc"] !== "2.0" || message["method"] !== "tools/call") return undefined
  const id = message["id"]
  if (!(typeof id === "string" || (typeof id === "number" && Number.isSafeInteger(id)))) return undefined
  if (Object.keys(message).some((key) => !MESSAGE_KEYS.has(key))) return undefined
  const params = message["params"]
  if (!isRecord(params) || params["name"] !== TOOL || !isRecord(params["arguments"])) return undefined
  if (Object.keys(params).some((key) => key !== "name" && key !== "arguments")) return undefined
  return { id, args: params["arguments"] }
}

/**
 * MCP `tools/call` of `query_database` on the fast lane (issue 28): the same gate, tool call and
 * pipeline as the `/mcp` route, answered as its MCP server answers (a JSON reply, stateless),
 * without a server, transport and message validation built per message. Any other message, a
 * header the SDK would look at further, or a call this replica cannot decide from memory is left
 * to the route, before anything is counted or recorded.
 */
export const makeFastMcp = (pipeline: RequestPipeline) =>
  Effect.gen(function* () {
    const gate = yield* Gate
    const queries = yield* Queries
    const connections = yield* Connections
    const toolCalls = yield* ToolCalls
    const answers = yield* makeFastAnswers(pipeline)
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const tool = (yield* ToolCatalogue).byName.get(TOOL)
    if (tool === undefined) return undefined
    const decodeArguments = Schema.decodeUnknownEither(tool.input)
    const logDefect = (cause: Cause.Cause<unknown>) => void runFork(Effect.logError("tool call failed", cause))

    /** The reply the SDK's server writes for a tools/call answered `outcome`. */
    const reply = (id: string | number, outcome: Either.Either<ToolOutput, ToolFailure>) =>
      HttpServerResponse.unsafeJson({ result: callToolResult(outcome), jsonrpc: "2.0", id })

    return (request: IncomingMessage, response: ServerResponse, handOff: HandOff): boolean => {
      const post = jsonPost(request, MCP_ROUTE)
      if (post === undefined) return false
      const { line, length } = post
      const headers = request.headers
      // What the SDK's transport checks before a message, as it checks them: both answer types accepted, its reading of the Content-Type, a protocol version it supports, no session.
      const accept = headers["accept"] ?? ""
      if (!accept.includes("application/json") || !accept.includes("text/event-stream") || headers["mcp-session-id"] !== undefined) return false
      if (!isJsonContentType(headers["content-type"])) return false
      const version = headers["mcp-protocol-version"]
      if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version as string)) return false
      const info = pipeline.draftOf(line, request.socket.remoteAddress ?? null)
      // The route's admission and the tool's scope and per-key limit, looked at before the body is read.
      const looked = gate.admitNow(info, line.headers, "general", tool.scope, false, true)
      if (looked === undefined) return false
      const at: FastRequest = { line, response, info, started: performance.now() }
      readJsonBody(
        request,
        length,
        handOff,
        (message, body) => {
          const call = queryCall(message)
          if (call === undefined) return handOff(request, body)
          const decoded = decodeArguments(call.args)
          if (Either.isLeft(decoded)) return handOff(request, body)
          // The connection's target for the caller's org (the count below checks the key and limits again).
          const target = connections.targetNow(looked, decoded.right.connection_name)
          if (target === undefined) return handOff(request, body)
          const principal = gate.admitNow(info, line.headers, "general", tool.scope, true, true)
          if (principal === undefined) return handOff(request, body)
          info.eventType = "mcp_tool_call"
          // Decoded already: the row's tool and arguments are written once, as callDecoded writes them (callBegun's would be overwritten).
          callDecoded(info, tool, decoded.right, () => target.connection.db_type)
          const change = pipeline.changeRecordOf(line, info, at.started)
          const plain = answers.plainly(at, change, (settled) =>
            queries.runNow(principal, decoded.right, { surface: "mcp", requestId: info.requestId, report: childQueryReport(info, tool) }, (exit, held) =>
              settled(() => reply(call.id, callEnded(info, Exit.map(exit, queryOutput), logDefect)), held)
            )
          )
          if (plain) return
          const route = Effect.map(Effect.exit(toolCalls.runDecoded(info, principal, tool, decoded.right)), (exit) => reply(call.id, callEnded(info, exit, logDefect)))
          answers.byEffect(at, change, route)
        },
        () => {
          info.eventType = "mcp"
          answers.leftMidBody(at, gate.admit(info, line.headers, "general", "mcp"))
        },
        (error) => answers.defect(at, error)
      )
      return true
    }
  })
