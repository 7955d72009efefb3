import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { ApiKey, Caller, CreateApiKey, CreatedApiKey } from "../domain/ApiKey"
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../domain/Errors"
import { KeyId } from "../domain/Ids"
import { Page, PageParams } from "../domain/Pagination"
import { RateClass, RequiredScope } from "./Annotations"
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
  )
  .add(
    HttpApiEndpoint.get("list", "/keys")
      .setUrlParams(PageParams)
      .addSuccess(Page(ApiKey))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "admin")
      .annotate(RateClass, "auth")
  )
  .add(HttpApiEndpoint.get("self", "/keys/self").addSuccess(Caller).annotate(RequiredScope, "authenticated"))
  .add(
    HttpApiEndpoint.del("remove", "/keys/:key_id")
      .setPath(Schema.Struct({ key_id: KeyId }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .annotate(RequiredScope, "admin")
      .annotate(RateClass, "auth")
  )
  .middleware(Authentication)
  .prefix("/api") {}
