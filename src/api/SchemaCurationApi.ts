import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionName } from "../domain/Connection"
import { GovernedQueryErrors } from "../domain/Query"
import { Annotations, CorrectColumnsInput, Endorsements, EndorsementsInput, EnrichedSchema, RefineInput } from "../domain/SchemaCuration"
import { TableInfo } from "../domain/SchemaSnapshot"
import { SemanticModelDocument, StoredSemanticModel } from "../domain/SemanticModel"
import { RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: ConnectionName })

/**
 * What people add to a scanned schema: endorsements, descriptions (by hand or generated), type
 * fixes, and the semantic model. Reads need `read`; every change needs `write`.
 */
export class SchemaCurationApi extends HttpApiGroup.make("schemaCuration")
  .add(HttpApiEndpoint.get("enriched", "/connections/:name/schema/enriched").setPath(ByName).addSuccess(EnrichedSchema).addError(GovernedQueryErrors).annotate(RequiredScope, "read"))
  .add(HttpApiEndpoint.get("endorsements", "/connections/:name/schema/endorsements").setPath(ByName).addSuccess(Endorsements).addError(GovernedQueryErrors).annotate(RequiredScope, "read"))
  .add(
    HttpApiEndpoint.put("putEndorsements", "/connections/:name/schema/endorsements")
      .setPath(ByName)
      .setPayload(EndorsementsInput)
      .addSuccess(Endorsements)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
  )
  .add(HttpApiEndpoint.get("annotations", "/connections/:name/annotations").setPath(ByName).addSuccess(Annotations).addError(GovernedQueryErrors).annotate(RequiredScope, "read"))
  .add(
    HttpApiEndpoint.post("generateAnnotations", "/connections/:name/annotations/generate")
      .setPath(ByName)
      .addSuccess(Annotations)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
  )
  .add(
    HttpApiEndpoint.post("refine", "/connections/:name/schema/refine")
      .setPath(ByName)
      .setPayload(RefineInput)
      .addSuccess(Annotations)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
  )
  .add(
    HttpApiEndpoint.post("correctColumns", "/connections/:name/schema/correct-columns")
      .setPath(ByName)
      .setPayload(CorrectColumnsInput)
      .addSuccess(TableInfo)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
  )
  .add(HttpApiEndpoint.get("semanticModel", "/connections/:name/semantic-model").setPath(ByName).addSuccess(StoredSemanticModel).addError(GovernedQueryErrors).annotate(RequiredScope, "read"))
  .add(
    HttpApiEndpoint.put("putSemanticModel", "/connections/:name/semantic-model")
      .setPath(ByName)
      .setPayload(SemanticModelDocument)
      .addSuccess(StoredSemanticModel)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
  )
  .add(
    HttpApiEndpoint.post("generateSemanticModel", "/connections/:name/semantic-model/generate")
      .setPath(ByName)
      .addSuccess(StoredSemanticModel)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
  )
  .middleware(Authentication)
  .prefix("/api") {}
