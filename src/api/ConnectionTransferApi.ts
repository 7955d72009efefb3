import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { ConnectionExport, ExportRequest, ImportRequest, ImportResult } from "../domain/ConnectionTransfer"
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../domain/Errors"
import { RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

/** Export and import of an org's connections; secrets leave only for an admin who confirms. */
export class ConnectionTransferApi extends HttpApiGroup.make("connectionTransfer")
  .add(
    HttpApiEndpoint.post("export", "/connections/export")
      .setPayload(ExportRequest)
      .addSuccess(ConnectionExport)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
  )
  .add(
    HttpApiEndpoint.post("import", "/connections/import")
      .setPayload(ImportRequest)
      .addSuccess(ImportResult)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
  )
  .middleware(Authentication)
  .prefix("/api") {}
