import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { InvalidRequest, NotFound, PayloadTooLarge } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { CreateReport, Report, ReportSummary, UpdateReport } from "../domain/Report"
import { ResourceId } from "../domain/Text"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: ResourceId })

export class ReportsApi extends HttpApiGroup.make("reports")
  .add(
    HttpApiEndpoint.get("list", "/reports")
      .setUrlParams(PageParams)
      .addSuccess(Page(ReportSummary))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List reports", "The organization's reports and dashboards, most recently updated first, without their HTML."))
  )
  .add(
    HttpApiEndpoint.get("get", "/reports/:id")
      .setPath(ById)
      .addSuccess(Report)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Get a report",
          "The report with its HTML and data, counted as viewed. The HTML is the author's: show it only in a frame sandboxed without scripts, on an opaque origin, with a strict CSP, as the web app does, never as a page of your own origin."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("create", "/reports")
      .setPayload(CreateReport)
      .addSuccess(Report, { status: 201 })
      .addError(InvalidRequest)
      .addError(PayloadTooLarge)
      .annotate(RequiredScope, "admin")
      .annotateContext(
        docs(
          "Publish a report",
          "A `title` (1–200), `kind` report (default) or dashboard, a self-contained HTML document of at most 5 MiB (413 above; these routes take request bodies up to 24 MiB where others take 2 MiB) and optional JSON `data` (at most 5 MiB)."
        )
      )
  )
  .add(
    HttpApiEndpoint.patch("update", "/reports/:id")
      .setPath(ById)
      .setPayload(UpdateReport)
      .addSuccess(Report)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(PayloadTooLarge)
      .annotate(RequiredScope, "admin")
      .annotateContext(docs("Change a report", "Replaces the fields given: title, kind, html, data."))
  )
  .add(
    HttpApiEndpoint.del("remove", "/reports/:id")
      .setPath(ById)
      .addSuccess(Schema.Struct({ id: Schema.String, deleted: Schema.Boolean }))
      .addError(NotFound)
      .annotate(RequiredScope, "admin")
      .annotateContext(docs("Delete a report", "Deletes the report."))
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Reports and dashboards the organization shares: self-contained HTML documents with their data, shown in a sandboxed frame.") {}
