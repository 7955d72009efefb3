import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BudgetExhausted } from "../domain/Budget"
import { ConnectionName } from "../domain/Connection"
import { InvalidRequest, NotFound } from "../domain/Errors"
import { PiiDetection, PiiDetectionSaved, PiiPolicy, PiiRules } from "../domain/Pii"
import { GovernedQueryErrors } from "../domain/Query"
import { docs, RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: ConnectionName })

const SAMPLING =
  "Samples each table with governed queries (blocked tables are skipped, budgets are charged, every sample is audited); only proposals leave the gateway, never sampled values."

export class PiiApi extends HttpApiGroup.make("pii")
  .add(
    HttpApiEndpoint.get("get", "/connections/:name/pii")
      .setPath(ByName)
      .addSuccess(PiiPolicy)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get PII rules", "The connection's PII rules and their version. 404 when the organization has no connection of that name."))
  )
  .add(
    HttpApiEndpoint.put("put", "/connections/:name/pii")
      .setPath(ByName)
      .setPayload(PiiRules)
      .addSuccess(PiiPolicy)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Replace PII rules",
          "Replaces the connection's PII rules (up to 2000) and bumps their version, so no result cached under the old rules is served again. 404 for an unknown connection."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("detect", "/connections/:name/detect-pii")
      .setPath(ByName)
      .addSuccess(PiiDetection)
      .addError(GovernedQueryErrors)
      .addError(BudgetExhausted)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
      .annotateContext(docs("Detect PII columns", `Proposes PII rules from column names and sampled values, changing nothing. ${SAMPLING}`))
  )
  .add(
    HttpApiEndpoint.post("detectAndSave", "/connections/:name/detect-and-save-pii")
      .setPath(ByName)
      .addSuccess(PiiDetectionSaved)
      .addError(GovernedQueryErrors)
      .addError(BudgetExhausted)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
      .annotateContext(
        docs("Detect and save PII rules", `Detects PII as \`detect-pii\` does and adds the proposals to the connection's rules, keeping the existing ones. ${SAMPLING}`)
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "A connection's PII rules: which columns are masked, hashed, redacted or dropped in every result.") {}
