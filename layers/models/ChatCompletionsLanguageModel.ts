import { AiError, IdGenerator, LanguageModel, type Prompt, type Response, Tool } from "@effect/ai"
import * as Sse from "@effect/experimental/Sse"
import { HttpClient, type HttpClientError, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Effect, type ParseResult, Predicate, type Redacted, Schema, Stream } from "effect"

/**
 * A language model on OpenAI's Chat Completions (`POST {baseUrl}/chat/completions`), which most
 * OpenAI-compatible servers speak (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter); the OpenAI
 * package's own model speaks the Responses API, and its generated client's strict schema refuses
 * the bodies several of these servers send, so the response is read leniently here.
 */
export interface ChatCompletionsOptions {
  /** e.g. http://localhost:11434/v1; no trailing slash. */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted | null
  readonly model: string
  readonly maxTokens: number
}

const MODULE = "ChatCompletionsLanguageModel"

type ChatMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string | null; readonly tool_calls?: ReadonlyArray<ChatToolCall> }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

interface ChatToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

const Nullish = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

const Usage = Schema.Struct({ prompt_tokens: Nullish(Schema.Number), completion_tokens: Nullish(Schema.Number), total_tokens: Nullish(Schema.Number) })

const ChatCompletion = Schema.Struct({
  id: Nullish(Schema.String),
  model: Nullish(Schema.String),
  choices: Schema.Array(
    Schema.Struct({
      message: Schema.Struct({
        content: Nullish(Schema.String),
        tool_calls: Nullish(
          // OpenAI sends the arguments as JSON text; some servers send the object itself.
          Schema.Array(Schema.Struct({ id: Nullish(Schema.String), function: Schema.Struct({ name: Schema.String, arguments: Schema.optional(Schema.Unknown) }) }))
        )
      }),
      finish_reason: Nullish(Schema.String)
    })
  ),
  usage: Nullish(Usage)
})
type ChatCompletion = typeof ChatCompletion.Type
type ChatCompletionChunkType = typeof ChatCompletionChunk.Type

const messagesOf = (prompt: Prompt.Prompt): Array<ChatMessage> =>
  prompt.content.flatMap((message): Array<ChatMessage> => {
    switch (message.role) {
      case "system":
        return [{ role: "system", content: message.content }]
      case "user":
        return [{ role: "user", content: message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n") }]
      case "assistant": {
        const text = message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")
        const calls = message.content.flatMap((part): Array<ChatToolCall> =>
          part.type === "tool-call" ? [{ id: part.id, type: "function", function: { name: part.name, arguments: JSON.stringify(part.params) } }] : []
        )
        return [{ role: "assistant", content: text.length > 0 ? text : null, ...(calls.length > 0 ? { tool_calls: calls } : {}) }]
      }
      case "tool":
        return message.content.map((part) => ({
          role: "tool" as const,
          tool_call_id: part.id,
          content: typeof part.result === "string" ? part.result : JSON.stringify(part.result)
        }))
    }
  })

const toolsOf = (options: LanguageModel.ProviderOptions) => {
  const tools = options.tools.filter((tool) => Tool.isUserDefined(tool))
  if (tools.length === 0) return {}
  const choice = options.toolChoice
  return {
    tools: tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, ...(tool.description === undefined ? {} : { description: tool.description }), parameters: Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast) }
    })),
    tool_choice:
      typeof choice === "string" ? choice : "tool" in choice ? { type: "function", function: { name: choice.tool } } : choice.mode === "required" ? "required" : "auto"
  }
}

const finishReason = (reason: string | null | undefined): Response.FinishReason => {
  switch (reason) {
    case "stop":
      return "stop"
    case "length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    case null:
    case undefined:
      return "unknown"
    default:
      return "other"
  }
}

const parseArguments = (name: string, args: unknown) => {
  if (!Predicate.isString(args)) return Effect.succeed(args ?? {})
  return Effect.try({
    try: () => Tool.unsafeSecureJsonParse(args.trim().length === 0 ? "{}" : args),
    catch: (cause) => new AiError.MalformedOutput({ module: MODULE, method: "toolCall", description: `The arguments of a ${name} call are not JSON`, cause })
  })
}

const partsOf = Effect.fnUntraced(function* (response: ChatCompletion) {
  const ids = yield* IdGenerator.IdGenerator
  const choice = response.choices[0]
  if (choice === undefined) return yield* new AiError.MalformedOutput({ module: MODULE, method: "generateText", description: "The response has no choices" })
  const parts: Array<Response.PartEncoded> = [
    { type: "response-metadata", ...(response.id != null ? { id: response.id } : {}), ...(response.model != null ? { modelId: response.model } : {}) }
  ]
  if (choice.message.content != null && choice.message.content.length > 0) parts.push({ type: "text", text: choice.message.content })
  for (const call of choice.message.tool_calls ?? []) {
    parts.push({
      type: "tool-call",
      id: call.id ?? (yield* ids.generateId()),
      name: call.function.name,
      params: yield* parseArguments(call.function.name, call.function.arguments),
      providerExecuted: false
    })
  }
  const input = response.usage?.prompt_tokens ?? undefined
  const output = response.usage?.completion_tokens ?? undefined
  parts.push({
    type: "finish",
    reason: finishReason(choice.finish_reason),
    usage: { inputTokens: input, outputTokens: output, totalTokens: response.usage?.total_tokens ?? (input !== undefined && output !== undefined ? input + output : undefined) }
  })
  return parts
})

// One chunk of a streamed completion: text and pieces of tool calls (by index) as they come, usage in the last.
const ChatCompletionChunk = Schema.Struct({
  id: Nullish(Schema.String),
  model: Nullish(Schema.String),
  choices: Nullish(
    Schema.Array(
      Schema.Struct({
        delta: Nullish(
          Schema.Struct({
            content: Nullish(Schema.String),
            tool_calls: Nullish(
              Schema.Array(
                Schema.Struct({
                  index: Nullish(Schema.Number),
                  id: Nullish(Schema.String),
                  function: Nullish(Schema.Struct({ name: Nullish(Schema.String), arguments: Nullish(Schema.Unknown) }))
                })
              )
            )
          })
        ),
        finish_reason: Nullish(Schema.String)
      })
    )
  ),
  usage: Nullish(Usage),
  // Servers that fail mid-stream say so in a chunk of its own.
  error: Nullish(Schema.Unknown)
})
const decodeChunk = Schema.decodeUnknown(Schema.parseJson(ChatCompletionChunk))
// The stream's last event, after the last chunk.
const DONE = "[DONE]" as const

const asAiError =
  (method: string) =>
  (error: HttpClientError.HttpClientError | ParseResult.ParseError | Sse.SseError): Effect.Effect<never, AiError.AiError> => {
    switch (error._tag) {
      case "RequestError":
        return Effect.fail(AiError.HttpRequestError.fromRequestError({ module: MODULE, method, error }))
      case "ResponseError":
        return AiError.HttpResponseError.fromResponseError({ module: MODULE, method, error })
      case "ParseError":
        return Effect.fail(AiError.MalformedOutput.fromParseError({ module: MODULE, method, error }))
      case "SseError":
        return Effect.fail(new AiError.MalformedOutput({ module: MODULE, method, description: error.message }))
    }
  }

/**
 * A streamed completion's chunks as the parts of a response: its text as it comes; its tool calls,
 * whose arguments arrive in pieces, whole at the end with the finish and the usage. A stream that
 * broke off (an error chunk, or its end before a finish reason or [DONE]) has no finish.
 */
const streamParts = (chunks: Stream.Stream<ChatCompletionChunkType | typeof DONE, AiError.AiError>) =>
  Stream.suspend(() => {
    const calls = new Map<number, { id: string | undefined; name: string; args: string }>()
    let textStarted = false
    let metadataSent = false
    let reason: string | null | undefined
    let usage: typeof Usage.Type | null | undefined
    let finished = false
    let broken = false
    const each = (chunk: ChatCompletionChunkType | typeof DONE): Effect.Effect<Array<Response.StreamPartEncoded>, AiError.AiError> => {
      if (chunk === DONE || broken) {
        finished ||= chunk === DONE
        return Effect.succeed([])
      }
      if (chunk.error != null) {
        broken = true
        return Effect.succeed([{ type: "error", error: chunk.error }])
      }
      const parts: Array<Response.StreamPartEncoded> = []
      if (!metadataSent) {
        metadataSent = true
        parts.push({ type: "response-metadata", ...(chunk.id != null ? { id: chunk.id } : {}), ...(chunk.model != null ? { modelId: chunk.model } : {}) })
      }
      if (chunk.usage != null) usage = chunk.usage
      const choice = chunk.choices?.[0]
      const content = choice?.delta?.content
      if (content != null && content.length > 0) {
        if (!textStarted) parts.push({ type: "text-start", id: "text" })
        textStarted = true
        parts.push({ type: "text-delta", id: "text", delta: content })
      }
      for (const piece of choice?.delta?.tool_calls ?? []) {
        const index = piece.index ?? calls.size
        const call = calls.get(index) ?? { id: undefined, name: "", args: "" }
        if (piece.id != null) call.id = piece.id
        if (piece.function?.name != null) call.name += piece.function.name
        const args = piece.function?.arguments
        if (args != null) call.args += typeof args === "string" ? args : JSON.stringify(args)
        calls.set(index, call)
      }
      if (choice?.finish_reason != null) {
        reason = choice.finish_reason
        finished = true
      }
      return Effect.succeed(parts)
    }
    const end = Effect.gen(function* () {
      if (broken || !finished) return []
      const ids = yield* IdGenerator.IdGenerator
      const parts: Array<Response.StreamPartEncoded> = textStarted ? [{ type: "text-end", id: "text" }] : []
      for (const [, call] of [...calls].sort(([a], [b]) => a - b)) {
        parts.push({ type: "tool-call", id: call.id ?? (yield* ids.generateId()), name: call.name, params: yield* parseArguments(call.name, call.args), providerExecuted: false })
      }
      const input = usage?.prompt_tokens ?? undefined
      const output = usage?.completion_tokens ?? undefined
      parts.push({
        type: "finish",
        reason: finishReason(reason ?? (calls.size > 0 ? "tool_calls" : null)),
        usage: { inputTokens: input, outputTokens: output, totalTokens: usage?.total_tokens ?? (input !== undefined && output !== undefined ? input + output : undefined) }
      })
      return parts
    })
    return Stream.concat(Stream.flattenIterables(Stream.mapEffect(chunks, each)), Stream.flattenIterables(Stream.fromEffect(end)))
  })

export const make = (options: ChatCompletionsOptions) =>
  Effect.gen(function* () {
    const client = HttpClient.filterStatusOk(
      (yield* HttpClient.HttpClient).pipe(
        HttpClient.mapRequest((request) =>
          request.pipe(
            HttpClientRequest.prependUrl(options.baseUrl),
            options.apiKey === null ? (r) => r : HttpClientRequest.bearerToken(options.apiKey),
            HttpClientRequest.acceptJson
          )
        )
      )
    )
    const body = (providerOptions: LanguageModel.ProviderOptions) => ({
      model: options.model,
      max_tokens: options.maxTokens,
      messages: messagesOf(providerOptions.prompt),
      ...toolsOf(providerOptions)
    })
    const generate = (providerOptions: LanguageModel.ProviderOptions) =>
      client
        .execute(HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(body(providerOptions))))
        .pipe(Effect.flatMap(HttpClientResponse.schemaBodyJson(ChatCompletion)), Effect.catchAll(asAiError("generateText")), Effect.flatMap(partsOf))
    const stream = (providerOptions: LanguageModel.ProviderOptions) =>
      client
        .execute(
          HttpClientRequest.post("/chat/completions").pipe(
            HttpClientRequest.bodyUnsafeJson({ ...body(providerOptions), stream: true, stream_options: { include_usage: true } })
          )
        )
        .pipe(
          Effect.map((response) => response.stream),
          Stream.unwrapScoped,
          Stream.decodeText(),
          Stream.pipeThroughChannel(Sse.makeChannel()),
          Stream.takeUntil((event) => event.data === DONE),
          Stream.mapEffect((event): Effect.Effect<ChatCompletionChunkType | typeof DONE, ParseResult.ParseError> => (event.data === DONE ? Effect.succeed(DONE) : decodeChunk(event.data))),
          Stream.catchAll(asAiError("streamText")),
          streamParts
        )
    return yield* LanguageModel.make({ generateText: generate, streamText: stream })
  })
