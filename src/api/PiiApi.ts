import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionName } from "../domain/Connection"
import { InvalidRequest, NotFound } from "../domain/Errors"
import { PiiDetection, PiiDetectionSaved, PiiPolicy, PiiRules } from "../domain/Pii"
import { GovernedQueryErrors } from "../domain/Query"
import { RateClass, RequiredScope } from "./Annotations"
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
  .add(
    HttpApiEndpoint.post("detect", "/connections/:name/detect-pii")
      .setPath(ByName)
      .addSuccess(PiiDetection)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
  )
  .add(
    HttpApiEndpoint.post("detectAndSave", "/connections/:name/detect-and-save-pii")
      .setPath(ByName)
      .addSuccess(PiiDetectionSaved)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
  )
  .middleware(Authentication)
  .prefix("/api") {}
