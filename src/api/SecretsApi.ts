import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { InvalidRequest, NotFound } from "../domain/Errors"
import { LlmKey, PutSecrets, SecretsList } from "../domain/Secrets"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const SET_SECRETS =
  "Sets the named secrets (`{\"secrets\":{\"name\":\"value\"}}`, at most 50; `null` removes one; secrets not named stay as they are) and answers which are set. Values are encrypted at rest and never returned."

export class SecretsApi extends HttpApiGroup.make("secrets")
  .add(
    HttpApiEndpoint.get("listOrganization", "/org/secrets")
      .addSuccess(SecretsList)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List the organization's secrets", "Which of the organization's secrets are set, by whom and when: never their values."))
  )
  .add(
    HttpApiEndpoint.put("putOrganization", "/org/secrets")
      .setPayload(PutSecrets)
      .addSuccess(SecretsList)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Set the organization's secrets", `${SET_SECRETS} \`llm_api_key\` is the key agent runs call the model with (bring your own key).`))
  )
  .add(
    HttpApiEndpoint.get("llmKey", "/org/secrets/llm-key")
      .addSuccess(LlmKey)
      .addError(NotFound)
      .annotate(RequiredScope, "execute")
      .annotateContext(
        docs(
          "Get the model key",
          "For runtimes that call the model themselves: the provider, base URL, model and key: the organization's `llm_api_key`, or on a self-hosted gateway its own `SP_LLM_API_KEY`. 404 when there is none. Every read is in the audit log."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listUser", "/user/secrets")
      .addSuccess(SecretsList)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List your secrets", "Which of the calling user's own secrets are set: never their values."))
  )
  .add(
    HttpApiEndpoint.put("putUser", "/user/secrets")
      .setPayload(PutSecrets)
      .addSuccess(SecretsList)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Set your secrets", SET_SECRETS))
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Secrets of the organization and of each user, encrypted at rest, readable only by the gateway itself.") {}
