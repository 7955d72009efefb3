import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionName } from "../domain/Connection"
import { GovernedQueryErrors } from "../domain/Query"
import { Annotations, CorrectColumnsInput, Endorsements, EndorsementsInput, EnrichedSchema, RefineInput } from "../domain/SchemaCuration"
import { TableInfo } from "../domain/SchemaSnapshot"
import { SemanticModelDocument, StoredSemanticModel } from "../domain/SemanticModel"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: ConnectionName })

export class SchemaCurationApi extends HttpApiGroup.make("schemaCuration")
  .add(
    HttpApiEndpoint.get("enriched", "/connections/:name/schema/enriched")
      .setPath(ByName)
      .addSuccess(EnrichedSchema)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs("Get the curated schema", "Every visible table, column by column, with its effective description and where it comes from, endorsements, corrected types and PII rules.")
      )
  )
  .add(
    HttpApiEndpoint.get("endorsements", "/connections/:name/schema/endorsements")
      .setPath(ByName)
      .addSuccess(Endorsements)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List endorsements", "The connection's tables and columns marked `trusted` or `deprecated`, with notes and who marked them when."))
  )
  .add(
    HttpApiEndpoint.put("putEndorsements", "/connections/:name/schema/endorsements")
      .setPath(ByName)
      .setPayload(EndorsementsInput)
      .addSuccess(Endorsements)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs("Replace endorsements", "Replaces all of the connection's endorsements with these (up to 5000). A table or column the latest snapshot does not have is a 404, and nothing changes.")
      )
  )
  .add(
    HttpApiEndpoint.get("annotations", "/connections/:name/annotations")
      .setPath(ByName)
      .addSuccess(Annotations)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs("List descriptions", "Each table's and column's description and its source: written by hand, generated, or the database's own comment.")
      )
  )
  .add(
    HttpApiEndpoint.post("generateAnnotations", "/connections/:name/annotations/generate")
      .setPath(ByName)
      .addSuccess(Annotations)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Generate descriptions",
          "Describes, by rules over names, types, keys and statistics, every table and column that has no description of any kind, and returns all descriptions. Descriptions already present are kept."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("refine", "/connections/:name/schema/refine")
      .setPath(ByName)
      .setPayload(RefineInput)
      .addSuccess(Annotations)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Describe a table", "Sets by hand the description of a table and of any of its columns (null clears one); hand-written descriptions win over generated ones and comments."))
  )
  .add(
    HttpApiEndpoint.post("correctColumns", "/connections/:name/schema/correct-columns")
      .setPath(ByName)
      .setPayload(CorrectColumnsInput)
      .addSuccess(TableInfo)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs("Correct column types", "Fixes by hand the types and descriptions of a table's columns (a null type goes back to the scanned one) and returns the table as every view will show it.")
      )
  )
  .add(
    HttpApiEndpoint.get("semanticModel", "/connections/:name/semantic-model")
      .setPath(ByName)
      .addSuccess(StoredSemanticModel)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get the semantic model", "The connection's stored semantic model: entities, dimensions and measures over its tables. 404 when none has been stored or generated yet."))
  )
  .add(
    HttpApiEndpoint.put("putSemanticModel", "/connections/:name/semantic-model")
      .setPath(ByName)
      .setPayload(SemanticModelDocument)
      .addSuccess(StoredSemanticModel)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Store a semantic model", "Replaces the connection's semantic model with this one; a model naming tables or columns the schema does not have is a 400."))
  )
  .add(
    HttpApiEndpoint.post("generateSemanticModel", "/connections/:name/semantic-model/generate")
      .setPath(ByName)
      .addSuccess(StoredSemanticModel)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs("Generate a semantic model", "Drafts a semantic model from the schema (keys, text and time columns, numbers) and stores it, replacing the current one.")
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(
    OpenApi.Description,
    "What people add to a scanned schema: endorsements, descriptions (by hand or generated), type fixes and the semantic model. Reads need `read`; every change needs `write`."
  ) {}
