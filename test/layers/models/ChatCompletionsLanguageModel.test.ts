import { LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
import { FetchHttpClient } from "@effect/platform"
import { Chunk, Effect, Schema, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ChatCompletions from "../../../layers/models/ChatCompletionsLanguageModel"
import { type ModelReply, startModelFake } from "../../fakes/ModelFake"

const toolkit = Toolkit.make(Tool.make("query_database", { description: "Runs SQL", parameters: { connection_name: Schema.String, sql: Schema.String } }))
// The agent runs tool calls itself: the toolkit only declares them.
const handled: Toolkit.WithHandler<typeof toolkit.tools> = { tools: toolkit.tools, handle: () => Effect.dieMessage("not run here") }

describe("the Chat Completions provider (openai-compatible), against a server speaking the protocol", () => {
  let fake: Awaited<ReturnType<typeof startModelFake>>
  let reply: ModelReply = { text: "unscripted" }
  beforeAll(async () => {
    fake = await startModelFake(() => reply)
  })
  afterAll(() => fake?.close())

  const withModel = <A, E>(effect: Effect.Effect<A, E, LanguageModel.LanguageModel>) =>
    Effect.runPromise(
      Effect.flatMap(ChatCompletions.make({ baseUrl: `${fake.url}/v1`, apiKey: null, model: "local", maxTokens: 256 }), (model) =>
        Effect.provideService(effect, LanguageModel.LanguageModel, model)
      ).pipe(Effect.provide(FetchHttpClient.layer), Effect.either)
    )
  const prompt = Prompt.make([{ role: "user", content: "How many orders?" }])
  const streamed = () =>
    withModel(Effect.map(Stream.runCollect(LanguageModel.streamText({ prompt, toolkit: handled, disableToolCallResolution: true })), Chunk.toArray))

  it("streams the text as it comes and puts each tool call's pieces together, with the finish and the usage last", async () => {
    reply = { text: "There are 42 orders.", toolCalls: [{ name: "query_database", args: { connection_name: "shop", sql: "select count(*) from orders" } }], usage: { input: 7, output: 5 } }
    const parts = (await streamed()).pipe((either) => (either._tag === "Right" ? either.right : expect.fail(String(either.left))))
    const deltas = parts.filter((p) => p.type === "text-delta").map((p) => p.delta)
    expect(deltas.length).toBeGreaterThan(3)
    expect(deltas.join("")).toBe("There are 42 orders.")
    expect(parts.filter((p) => p.type === "tool-call").map((p) => [p.name, p.params])).toEqual([["query_database", { connection_name: "shop", sql: "select count(*) from orders" }]])
    expect(parts.at(-1)).toMatchObject({ type: "finish", reason: "tool-calls", usage: { inputTokens: 7, outputTokens: 5, totalTokens: 12 } })
    expect(fake.received.at(-1)!.body).toMatchObject({ model: "local", stream: true, stream_options: { include_usage: true } })

    // The same answer, not streamed.
    const whole = await withModel(LanguageModel.generateText({ prompt, toolkit: handled, disableToolCallResolution: true }))
    expect(whole._tag === "Right" && [whole.right.text, whole.right.toolCalls.map((c) => c.params), whole.right.usage.inputTokens]).toEqual([
      "There are 42 orders.",
      [{ connection_name: "shop", sql: "select count(*) from orders" }],
      7
    ])
  })

  it("a stream the server breaks off with an error chunk ends with an error part; an HTTP failure is the status", async () => {
    reply = { text: "one two three four five six", breakOff: true }
    const parts = await streamed()
    expect(parts._tag === "Right" && parts.right.at(-1)).toMatchObject({ type: "error" })
    expect(parts._tag === "Right" && parts.right.some((p) => p.type === "finish")).toBe(false)

    reply = { status: 429, headers: { "retry-after": "3" } }
    const failed = await streamed()
    expect(failed._tag === "Left" && failed.left).toMatchObject({ _tag: "HttpResponseError", response: { status: 429 } })
  })
})
