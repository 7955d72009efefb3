import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BrowseListing, BrowseParams, BuildCloudProjects, CreateDbtProject, DiscoverBuildCloudProjects, DbtProject, DbtProjectDetail, DbtProjectName, UpdateDbtProject } from "../domain/DbtProject"
import { Conflict, InvalidRequest, NotAvailableHere, NotFound, Unavailable } from "../domain/Errors"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: DbtProjectName })

export class DbtProjectsApi extends HttpApiGroup.make("dbtProjects")
  .add(
    HttpApiEndpoint.get("list", "/projects")
      .addSuccess(Schema.Struct({ items: Schema.Array(DbtProject) }))
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List dbt projects", "The organization's dbt projects, with their models counted by layer as last scanned."))
  )
  .add(
    HttpApiEndpoint.post("create", "/projects")
      .setPayload(CreateDbtProject)
      .addSuccess(DbtProjectDetail, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(NotAvailableHere)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Register a dbt project",
          "Either `path`, a folder under SP_PROJECT_ROOTS (self-hosted only), or `workspace_project_id`, a workspace project's repository (its default branch; `subdirectory` when dbt_project.yml is not at its top). Scanned at once: dbt_project.yml, then target/manifest.json when present, else the models tree — models by layer (staging, intermediate, marts), sources, tests, lineage."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/projects/:name")
      .setPath(ByName)
      .addSuccess(DbtProjectDetail)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a dbt project", "The project and its last scan."))
  )
  .add(
    HttpApiEndpoint.put("update", "/projects/:name")
      .setPath(ByName)
      .setPayload(UpdateDbtProject)
      .addSuccess(DbtProjectDetail)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Change a dbt project", "Its description or the connection its models build on."))
  )
  .add(
    HttpApiEndpoint.del("remove", "/projects/:name")
      .setPath(ByName)
      .addSuccess(Schema.Struct({ name: Schema.String, deleted: Schema.Boolean }))
      .addError(NotFound)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Forget a dbt project", "Its record and scan; its files are left as they are."))
  )
  .add(
    HttpApiEndpoint.post("scan", "/projects/:name/scan")
      .setPath(ByName)
      .addSuccess(DbtProjectDetail)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(NotAvailableHere)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Scan a dbt project again", "Reads its files again; a failure is kept as scan_error, with the scan cleared."))
  )
  .add(
    HttpApiEndpoint.get("browse", "/files/browse")
      .setUrlParams(BrowseParams)
      .addSuccess(BrowseListing)
      .addError(InvalidRequest)
      .addError(NotAvailableHere)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Browse folders for dbt projects", "One level of a folder under SP_PROJECT_ROOTS (no path: the roots), symbolic links shown but never followed; `dbt_project` says whether it holds a dbt project. Self-hosted only."))
  )
  .add(
    HttpApiEndpoint.post("discoverBuildCloud", "/buildcloud/projects")
      .setPayload(DiscoverBuildCloudProjects)
      .addSuccess(BuildCloudProjects)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Unavailable)
      .annotate(RequiredScope, "admin")
      .annotateContext(
        docs(
          "Discover projects on a hosted dbt build service",
          "Lists the account's projects on dbt Cloud (Admin API v3): name, git remote (without credentials), subdirectory and warehouse type, to register as workspace or dbt projects. `api_token` is used for this request only and kept nowhere; `access_url` is the account's access URL on the service's own hosts (absent: the gateway's SP_BUILDCLOUD_URL)."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "dbt projects the gateway scans: models by layer, sources, tests and lineage.") {}
