import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ApiKey, Caller, CreateApiKey, CreatedApiKey } from "../domain/ApiKey"
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../domain/Errors"
import { KeyId } from "../domain/Ids"
import { Page, PageParams } from "../domain/Pagination"
import { docs, RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

export class KeysApi extends HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.post("create", "/keys")
      .setPayload(CreateApiKey)
      .addSuccess(CreatedApiKey, { status: 201 })
      .addError(InvalidRequest)
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(RequiredScope, "admin")
      .annotate(RateClass, "auth")
      .annotateContext(
        docs(
          "Create an API key",
          "Creates a key with the given scopes and optional expiry; the response holds the raw key, shown this once and never again. Giving a key the `admin` scope needs an admin role (403); a name already used in the organization is a 409."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/keys")
      .setUrlParams(PageParams)
      .addSuccess(Page(ApiKey))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "admin")
      .annotate(RateClass, "auth")
      .annotateContext(
        docs(
          "List API keys",
          "The organization's keys (prefix, scopes, expiry, last use; never the key itself), newest first. Paginated: pass `next_cursor` back as `cursor` for the next page (`limit` 1–500, default 100)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("self", "/keys/self")
      .addSuccess(Caller)
      .annotate(RequiredScope, "authenticated")
      .annotateContext(docs("Describe the caller", "Who the credential on this request is: its kind, user, key id and prefix, scopes and role. Any valid credential may call it."))
  )
  .add(
    HttpApiEndpoint.del("remove", "/keys/:key_id")
      .setPath(Schema.Struct({ key_id: KeyId }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "admin")
      .annotate(RateClass, "auth")
      .annotateContext(
        docs(
          "Delete an API key",
          "Revokes the key at once on every replica. 404 when the organization has no such key; 409 for the local key, which the gateway would recreate at its next start."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "API keys: create, list and revoke the credentials callers present, each limited to a set of scopes.") {}
