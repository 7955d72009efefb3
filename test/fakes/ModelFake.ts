import type * as http from "node:http"
import { listenFake } from "./FakeServer"

/** One model request as the fake received it, in both wire formats' common terms. */
export interface ModelRequest {
  readonly provider: "anthropic" | "chat-completions"
  readonly headers: http.IncomingHttpHeaders
  readonly body: any
  /** The names of the tools the request offered. */
  readonly tools: ReadonlyArray<string>
  /** The results of tool calls sent back in this request, oldest first, as text. */
  readonly toolResults: ReadonlyArray<{ readonly id: string; readonly text: string; readonly isError: boolean }>
  /** The whole request as text, to look for what must never be in a prompt. */
  readonly raw: string
}

/** What the scripted model answers: text, tool calls, or an HTTP failure. */
export type ModelReply =
  | { readonly text?: string; readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly args: unknown }>; readonly usage?: { input: number; output: number } }
  | { readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }

/**
 * A protocol-level fake of a model provider: Anthropic's Messages API (`/v1/messages`) and OpenAI's
 * Chat Completions (`/v1/chat/completions`), non-streaming, answering each request with what the
 * test's script says, and keeping every request it received.
 */
export const startModelFake = async (script: (request: ModelRequest, index: number) => ModelReply | Promise<ModelReply>) => {
  const received: Array<ModelRequest> = []
  let calls = 0
  const { server, port } = await listenFake(async (req, res) => {
    let raw = ""
    for await (const chunk of req) raw += chunk
    const body = JSON.parse(raw)
    const anthropic = req.url?.startsWith("/v1/messages") === true
    const request: ModelRequest = anthropic
      ? {
          provider: "anthropic",
          headers: req.headers,
          body,
          raw,
          tools: (body.tools ?? []).map((t: any) => t.name),
          toolResults: (body.messages ?? []).flatMap((m: any) =>
            Array.isArray(m.content)
              ? m.content
                  .filter((c: any) => c.type === "tool_result")
                  .map((c: any) => ({ id: c.tool_use_id, text: typeof c.content === "string" ? JSON.parse(c.content) : JSON.stringify(c.content), isError: c.is_error === true }))
              : []
          )
        }
      : {
          provider: "chat-completions",
          headers: req.headers,
          body,
          raw,
          tools: (body.tools ?? []).map((t: any) => t.function.name),
          toolResults: (body.messages ?? []).filter((m: any) => m.role === "tool").map((m: any) => ({ id: m.tool_call_id, text: m.content, isError: false }))
        }
    received.push(request)
    const reply = await script(request, calls++)
    if ("status" in reply) {
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
      res.end(JSON.stringify(reply.body ?? (anthropic ? { type: "error", error: { type: "api_error", message: "scripted failure" } } : { error: { message: "scripted failure" } })))
      return
    }
    const usage = reply.usage ?? { input: 100, output: 20 }
    const toolCalls = (reply.toolCalls ?? []).map((call, i) => ({ ...call, id: `call_${calls}_${i}` }))
    res.writeHead(200, { "content-type": "application/json" })
    res.end(
      JSON.stringify(
        anthropic
          ? {
              id: `msg_${calls}`,
              type: "message",
              role: "assistant",
              model: body.model,
              content: [
                ...(reply.text === undefined ? [] : [{ type: "text", text: reply.text }]),
                ...toolCalls.map((call) => ({ type: "tool_use", id: call.id, name: call.name, input: call.args }))
              ],
              stop_reason: toolCalls.length > 0 ? "tool_use" : "end_turn",
              stop_sequence: null,
              usage: { input_tokens: usage.input, output_tokens: usage.output }
            }
          : {
              id: `chatcmpl-${calls}`,
              object: "chat.completion",
              model: body.model,
              choices: [
                {
                  index: 0,
                  message: {
                    role: "assistant",
                    content: reply.text ?? null,
                    ...(toolCalls.length > 0
                      ? { tool_calls: toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: JSON.stringify(call.args) } })) }
                      : {})
                  },
                  finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop"
                }
              ],
              usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output }
            }
      )
    )
  })
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
