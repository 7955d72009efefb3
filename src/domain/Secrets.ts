import { Schema } from "effect"

/** The organization secret agent runs call their model with (bring your own key). */
export const LLM_KEY_SECRET = "llm_api_key"
export const MAX_SECRETS = 50

export const SecretName = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9_]{0,62}$/, { message: () => "a secret's name is lower-case letters, digits and _, starting with a letter, at most 63 characters" })
)

const SecretValue = Schema.String.pipe(
  Schema.minLength(1, { message: () => "a secret's value is not empty (send null to remove it)" }),
  Schema.maxLength(10_000, { message: () => "a secret's value is at most 10000 characters" })
)

/** Sets the named secrets; null removes one; secrets not named are left as they are. */
export const PutSecrets = Schema.Struct({
  secrets: Schema.Record({ key: SecretName, value: Schema.NullOr(SecretValue) }).pipe(
    Schema.filter((secrets) => Object.keys(secrets).length <= MAX_SECRETS || `at most ${MAX_SECRETS} secrets at once`)
  )
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type PutSecrets = typeof PutSecrets.Type

/** Which secrets are set: never their values. */
export const SecretsList = Schema.Struct({
  secrets: Schema.Array(Schema.Struct({ name: Schema.String, updated_at: Schema.Date, updated_by: Schema.NullOr(Schema.String) }))
})

/** The model key, for runtimes that call the model themselves. */
export const LlmKey = Schema.Struct({
  provider: Schema.String,
  base_url: Schema.NullOr(Schema.String),
  model: Schema.String,
  api_key: Schema.String,
  source: Schema.Literal("organization", "gateway")
})
