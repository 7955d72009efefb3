import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ConnectionExport, ExportRequest, ImportRequest, ImportResult } from "../domain/ConnectionTransfer"
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../domain/Errors"
import { docs, RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

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
      .annotateContext(
        docs(
          "Export connections",
          "Exports the named connections (all of them when `names` is left out) with their PII rules, in a document `import` accepts. Secrets are left out unless `include_secrets` and `confirm` are both true, which needs the `admin` scope (403) and is marked in the audit log; an unknown name is a 404."
        )
      )
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
      .annotateContext(
        docs(
          "Import connections",
          "Creates connections (and their PII rules) from an export; every name is checked before anything changes. A name that exists fails the whole import with 409 unless `on_conflict` is `skip` or `replace`; replacing a connection configured by the environment is a 403."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Export and import of the organization's connections; secrets leave only for an admin who confirms.") {}
