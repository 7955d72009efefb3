import type * as http from "node:http"
import { listenFake } from "./FakeServer"

/** One model request as the fake received it, in both wire formats' common terms. */
export interface ModelRequest {
  readonly provider: "anthropic" | "chat-completions"
  /** The request's path: a test can tell its clients apart by the base URL each was given. */
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: any
  /** The names of the tools the request offered. */
  readonly tools: ReadonlyArray<string>
  /** The results of tool calls sent back in this request, oldest first, as text. */
  readonly toolResults: ReadonlyArray<{ readonly id: string; readonly text: string; readonly isError: boolean }>
  /** The whole request as text, to look for what must never be in a prompt. */
  readonly raw: string
}

/**
 * What the scripted model answers: text, tool calls, or an HTTP failure. Streamed (when the request
 * asks for a stream), the text goes out a word at a time, `paceMs` apart; `breakOff` ends the
 * stream half-way with the provider's error event instead of its finish, and `cutOff` drops the
 * connection half-way (a network failure mid-answer).
 */
export type ModelReply =
  | {
      readonly text?: string
      readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly args: unknown }>
      readonly usage?: { input: number; output: number }
      readonly paceMs?: number
      readonly breakOff?: boolean
      readonly cutOff?: boolean
    }
  | { readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }

type Answer = Omit<Exclude<ModelReply, { readonly status: number }>, "toolCalls"> & { readonly toolCalls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly args: unknown }> }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** Text as a stream sends it: a word (with the space before it) at a time. */
const words = (text: string) => text.match(/\s*\S+|\s+$/g) ?? []
/** A JSON text in two pieces, as providers send tool arguments. */
const halves = (json: string) => [json.slice(0, Math.ceil(json.length / 2)), json.slice(Math.ceil(json.length / 2))]

/** Anthropic's Messages stream: message_start, a content block per text and tool call, message_delta with the usage, message_stop. */
const anthropicEvents = (answer: Answer, model: string, id: string): Array<Array<readonly [string, unknown]>> => {
  const usage = answer.usage ?? { input: 100, output: 20 }
  const frames: Array<Array<readonly [string, unknown]>> = [
    [["message_start", { type: "message_start", message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input, output_tokens: 1 } } }]]
  ]
  let index = 0
  if (answer.text !== undefined) {
    frames.push([["content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } }]])
    for (const word of words(answer.text)) frames.push([["content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: word } }]])
    frames.push([["content_block_stop", { type: "content_block_stop", index }]])
    index += 1
  }
  for (const call of answer.toolCalls) {
    frames.push([["content_block_start", { type: "content_block_start", index, content_block: { type: "tool_use", id: call.id, name: call.name, input: {} } }]])
    for (const piece of halves(JSON.stringify(call.args))) frames.push([["content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } }]])
    frames.push([["content_block_stop", { type: "content_block_stop", index }]])
    index += 1
  }
  frames.push([
    ["message_delta", { type: "message_delta", delta: { stop_reason: answer.toolCalls.length > 0 ? "tool_use" : "end_turn", stop_sequence: null }, usage: { output_tokens: usage.output } }],
    ["message_stop", { type: "message_stop" }]
  ])
  return frames
}

/** Chat Completions' stream: chunks of text, tool calls in pieces by index, the finish, the usage, [DONE]. */
const chatCompletionChunks = (answer: Answer, model: string, id: string): Array<Array<readonly [null, unknown]>> => {
  const usage = answer.usage ?? { input: 100, output: 20 }
  const chunk = (delta: unknown, finish: string | null = null) => [[null, { id, object: "chat.completion.chunk", model, choices: [{ index: 0, delta, finish_reason: finish }] }] as const]
  const frames: Array<Array<readonly [null, unknown]>> = [chunk({ role: "assistant", content: "" })]
  for (const word of words(answer.text ?? "")) frames.push(chunk({ content: word }))
  answer.toolCalls.forEach((call, index) => {
    const [first, second] = halves(JSON.stringify(call.args))
    frames.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: first } }] }))
    frames.push(chunk({ tool_calls: [{ index, function: { arguments: second } }] }))
  })
  frames.push(chunk({}, answer.toolCalls.length > 0 ? "tool_calls" : "stop"))
  frames.push([[null, { id, object: "chat.completion.chunk", model, choices: [], usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } }]])
  return frames
}

/** Writes a stream's frames, `paceMs` apart; `breakOff` puts the provider's error in place of the second half, `cutOff` drops the connection there. */
const streamFrames = async (res: http.ServerResponse, frames: Array<Array<readonly [string | null, unknown]>>, answer: Answer, anthropic: boolean) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  const cut = answer.breakOff === true || answer.cutOff === true ? Math.ceil(frames.length / 2) : frames.length
  for (const [at, frame] of frames.slice(0, cut).entries()) {
    if (at > 0 && answer.paceMs !== undefined) await sleep(answer.paceMs)
    res.write(frame.map(([event, data]) => `${event === null ? "" : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`).join(""))
  }
  if (answer.cutOff === true) {
    await sleep(50)
    res.socket?.destroy()
    return
  }
  if (answer.breakOff === true) {
    res.end(
      anthropic
        ? `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })}\n\n`
        : `data: ${JSON.stringify({ error: { message: "The server is overloaded", type: "server_error" } })}\n\n`
    )
    return
  }
  res.end(anthropic ? "" : "data: [DONE]\n\n")
}

/**
 * A protocol-level fake of a model provider: Anthropic's Messages API (`/v1/messages`) and OpenAI's
 * Chat Completions (`/v1/chat/completions`), streamed when the request asks for it, answering each
 * request with what the test's script says, and keeping every request it received.
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
          path: req.url ?? "",
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
          path: req.url ?? "",
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
    if (body.stream === true) {
      const answer: Answer = { ...reply, toolCalls }
      await streamFrames(res, anthropic ? anthropicEvents(answer, body.model, `msg_${calls}`) : chatCompletionChunks(answer, body.model, `chatcmpl-${calls}`), answer, anthropic)
      return
    }
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
