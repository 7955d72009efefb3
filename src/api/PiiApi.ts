import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionName } from "../domain/Connection"
import { InvalidRequest, NotFound } from "../domain/Errors"
import { PiiPolicy, PiiRules } from "../domain/Pii"
import { RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: ConnectionName })

/** A connection's PII rules: which columns are masked, hashed, redacted or dropped in every result. */
export class PiiApi extends HttpApiGroup.make("pii")
  .add(
    HttpApiEndpoint.get("get", "/connections/:name/pii")
      .setPath(ByName)
      .addSuccess(PiiPolicy)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.put("put", "/connections/:name/pii")
      .setPath(ByName)
      .setPayload(PiiRules)
      .addSuccess(PiiPolicy)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "write")
  )
  .middleware(Authentication)
  .prefix("/api") {}
