import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionName } from "../domain/Connection"
import { BranchDiffParams, BranchProjectName, CreateDbBranch, DbBranch, DbBranchName } from "../domain/DbBranch"
import { CapacityReached, Conflict, Forbidden, InvalidRequest, NotAvailableHere, NotFound, Unavailable } from "../domain/Errors"
import { DbtProfile, DbtProfileParams } from "../domain/DbtRunToken"
import { SchemaDiff } from "../domain/SchemaSnapshot"
import { GovernedQueryErrors } from "../domain/Query"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ProjectPath = Schema.Struct({ name: ConnectionName, project: BranchProjectName })

export class DbBranchesApi extends HttpApiGroup.make("dbBranches")
  .add(
    HttpApiEndpoint.get("list", "/connections/:name/dbbranch/projects/:project/branches")
      .setPath(ProjectPath)
      .addSuccess(Schema.Struct({ items: Schema.Array(DbBranch) }))
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List a project's database branches", "The branches of `project` on the connection, oldest first (main, the connection's own database, is not listed)."))
  )
  .add(
    HttpApiEndpoint.post("create", "/connections/:name/dbbranch/projects/:project/branches")
      .setPath(ProjectPath)
      .setPayload(CreateDbBranch)
      .addSuccess(DbBranch, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(CapacityReached)
      .addError(Unavailable)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Make a database branch",
          "A copy of `parent` (main: the connection's own database; or another branch of the project) as a database of its own on the connection's PostgreSQL server, owned by a role of its own that is no superuser. The copy needs the connection's role to have CREATEDB and CREATEROLE, and fails (409) while any session is open on what it copies. `owner_job` ties it to a job (deleted once the job ends); `lease_seconds` deletes it after that long. The names main, staging and prod are never branches."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("remove", "/connections/:name/dbbranch/projects/:project/branches/:branch")
      .setPath(Schema.Struct({ ...ProjectPath.fields, branch: DbBranchName }))
      .addSuccess(Schema.Struct({ name: Schema.String, deleted: Schema.Boolean }))
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Unavailable)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Delete a database branch", "Drops the branch's database (ending its sessions) and its role. main, staging and prod are protected: never deleted."))
  )
  .add(
    HttpApiEndpoint.get("diff", "/connections/:name/dbbranch/branch-diff")
      .setPath(Schema.Struct({ name: ConnectionName }))
      .setUrlParams(BranchDiffParams)
      .addSuccess(Schema.Struct({ project: Schema.String, base: Schema.String, compare: Schema.String, diff: SchemaDiff }))
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Compare two branches' schemas", "Tables added, removed and changed from `base` (default main) to `compare`, read live from both databases; tables the connection hides are left out."))
  )
  .add(
    HttpApiEndpoint.get("dbtProfile", "/connections/:name/dbbranch/dbt-profile")
      .setPath(Schema.Struct({ name: ConnectionName }))
      .setUrlParams(DbtProfileParams)
      .addSuccess(DbtProfile)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Unavailable)
      .addError(NotAvailableHere)
      .addError(Forbidden)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "A dbt profile for a branch",
          "A `profiles.yml` whose target points at the dbt proxy with a freshly minted run token for `branch` of `project` as its password (never the connection's own password). The caller needs the dbt_proxy scope as well, which the token acts with."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Database branches: disposable copies of a connection's database to build into (dbt through the dbt proxy, evaluation runs' write tasks).") {}
