import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { LanguageModel } from "@effect/ai"
import { FetchHttpClient } from "@effect/platform"
import { ConfigError, Context, Duration, Effect, Layer, Option, RcMap, Redacted, type Scope } from "effect"
import { AppConfig } from "./AppConfig"
import * as ChatCompletions from "./models/ChatCompletionsLanguageModel"

/** USD per million tokens. */
export interface Price {
  readonly input: number
  readonly output: number
}

/** The model a run talks to, and what its tokens cost. */
export interface ModelChoice {
  readonly name: string
  readonly model: LanguageModel.Service
  readonly price: Price
}

const DEFAULT_MODELS = { anthropic: "claude-sonnet-4-5", openai: "gpt-4.1" } as const
const OPENAI_URL = "https://api.openai.com/v1"

// List prices at the time of writing; SP_LLM_PRICE_PER_MTOK overrides, and an unknown model costs 0 unless it is set.
const PRICES: ReadonlyArray<readonly [RegExp, Price]> = [
  [/^claude-(opus-4|3-opus)/, { input: 15, output: 75 }],
  [/^claude-(sonnet-4|3-7-sonnet|3-5-sonnet)/, { input: 3, output: 15 }],
  [/^claude-(haiku-4|3-5-haiku)/, { input: 0.8, output: 4 }],
  [/^gpt-4\.1-mini/, { input: 0.4, output: 1.6 }],
  [/^gpt-4\.1/, { input: 2, output: 8 }],
  [/^gpt-4o-mini/, { input: 0.15, output: 0.6 }],
  [/^gpt-4o/, { input: 2.5, output: 10 }]
]

const parsePrice = (text: string): Option.Option<Price> => {
  const [input, output] = text.split(",").map((part) => Number(part.trim()))
  return input !== undefined && output !== undefined && input >= 0 && output >= 0 && Number.isFinite(input) && Number.isFinite(output)
    ? Option.some({ input, output })
    : Option.none()
}

/** The language model runs use, from SP_LLM_PROVIDER, SP_LLM_BASE_URL and SP_LLM_MODEL, with the organization's key or SP_LLM_API_KEY. */
export class LanguageModels extends Effect.Service<LanguageModels>()("sluice/LanguageModels", {
  scoped: Effect.gen(function* () {
    const config = yield* AppConfig
    const provider = config.llmProvider
    const baseUrl = Option.map(config.llmBaseUrl, (url) => url.toString().replace(/\/+$/, ""))
    const name = Option.getOrUndefined(config.llmModel) ?? (provider === "openai-compatible" ? undefined : DEFAULT_MODELS[provider])
    if (name === undefined) return yield* Effect.fail(ConfigError.MissingData(["SP_LLM_MODEL"], "is required when SP_LLM_PROVIDER=openai-compatible"))
    if (provider === "openai-compatible" && Option.isNone(baseUrl)) {
      return yield* Effect.fail(ConfigError.MissingData(["SP_LLM_BASE_URL"], "is required when SP_LLM_PROVIDER=openai-compatible"))
    }
    const price = yield* Option.match(config.llmPrice, {
      onNone: () => Effect.succeed(PRICES.find(([pattern]) => pattern.test(name))?.[1] ?? { input: 0, output: 0 }),
      onSome: (text) =>
        Option.match(parsePrice(text), {
          onNone: () => Effect.fail(ConfigError.InvalidData(["SP_LLM_PRICE_PER_MTOK"], "must be two non-negative numbers, input and output USD per million tokens: 3,15")),
          onSome: Effect.succeed
        })
    })
    const build = (key: Option.Option<Redacted.Redacted>) =>
      Effect.map(
        Layer.build(
          Layer.provide(
            provider === "anthropic"
              ? AnthropicLanguageModel.layer({ model: name, config: { max_tokens: config.llmMaxTokens } }).pipe(
                  Layer.provide(AnthropicClient.layer({ apiKey: Option.getOrUndefined(key), ...(Option.isSome(baseUrl) ? { apiUrl: baseUrl.value } : {}) }))
                )
              : Layer.effect(
                  LanguageModel.LanguageModel,
                  ChatCompletions.make({ baseUrl: Option.getOrElse(baseUrl, () => OPENAI_URL), apiKey: Option.getOrNull(key), model: name, maxTokens: config.llmMaxTokens })
                ),
            FetchHttpClient.layer
          )
        ),
        (context): ModelChoice => ({ name, model: Context.get(context, LanguageModel.LanguageModel), price })
      )
    // A local OpenAI-compatible server may take no key; the hosted providers always do.
    const keyless = provider === "openai-compatible"
    const gatewayKey = config.llmApiKey
    const gatewayModel = Option.isSome(gatewayKey) || keyless ? Option.some(yield* build(gatewayKey)) : Option.none<ModelChoice>()

    // Organizations' own keys: one client per key while it is in use, dropped a while after.
    const byOrganizationKey = yield* RcMap.make({ lookup: (key: string) => build(Option.some(Redacted.make(key))), idleTimeToLive: Duration.minutes(5) })

    /** The model to call with the organization's own key when it has one (held for the caller's scope), else with the gateway's. */
    const choose = (organizationKey: Option.Option<Redacted.Redacted>): Effect.Effect<Option.Option<ModelChoice>, never, Scope.Scope> =>
      Option.isSome(organizationKey) ? Effect.asSome(RcMap.get(byOrganizationKey, Redacted.value(organizationKey.value))) : Effect.succeed(gatewayModel)

    return {
      provider,
      baseUrl: Option.getOrNull(baseUrl),
      model: name,
      gatewayKey,
      choose
    } as const
  })
}) {}

/** What a call's tokens cost, in USD. */
export const costOf = (price: Price, inputTokens: number, outputTokens: number) => (inputTokens * price.input + outputTokens * price.output) / 1_000_000
