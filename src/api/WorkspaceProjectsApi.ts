import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Conflict, InsufficientScope, InvalidRequest, NotFound, Unavailable } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { ResourceId } from "../domain/Text"
import { CloneUrl, CreateWorkspaceProject, UpdateWorkspaceProject, WorkspaceProject } from "../domain/WorkspaceProject"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: ResourceId })

export class WorkspaceProjectsApi extends HttpApiGroup.make("workspaceProjects")
  .add(
    HttpApiEndpoint.get("list", "/workspace-projects")
      .setUrlParams(PageParams)
      .addSuccess(Page(WorkspaceProject))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List workspace projects", "The organization's workspace projects (git repositories served by the gateway), newest first."))
  )
  .add(
    HttpApiEndpoint.post("create", "/workspace-projects")
      .setPayload(CreateWorkspaceProject)
      .addSuccess(WorkspaceProject, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Unavailable)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Create a workspace project",
          "An empty git repository the gateway serves at /git/{id}.git: `name` ([A-Za-z0-9_-], 1–64, unique in the organization), optional `display_name`, `description`, `connection_name` (a connection of yours), `default_branch` (main), `protected_branches` (pushes to them are refused), `tags`."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/workspace-projects/:id")
      .setPath(ById)
      .addSuccess(WorkspaceProject)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a workspace project", "The project's record and branch rules."))
  )
  .add(
    HttpApiEndpoint.put("update", "/workspace-projects/:id")
      .setPath(ById)
      .setPayload(UpdateWorkspaceProject)
      .addSuccess(WorkspaceProject)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Unavailable)
      .addError(InsufficientScope)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Change a workspace project",
          "Replaces the fields given: name, display_name, description, connection_name, default_branch (what a clone checks out), protected_branches, tags, status (changing protected branches, the default branch or the status needs the admin scope: a key that pushes cannot lift or go around a protection) (active or archived: an archived project is cloned but not pushed to)."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("remove", "/workspace-projects/:id")
      .setPath(ById)
      .addSuccess(Schema.Struct({ id: Schema.String, deleted: Schema.Boolean }))
      .addError(NotFound)
      .addError(Unavailable)
      .addError(InsufficientScope)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Delete a workspace project", "Deletes the project and its repository (one with protected branches: admin scope)."))
  )
  .add(
    HttpApiEndpoint.get("cloneUrl", "/workspace-projects/:id/clone-url")
      .setPath(ById)
      .addSuccess(CloneUrl)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("How to clone a workspace project", "Its git URL on the origin you called; the password is an API key (read scope to clone and pull, write to push), never part of the URL."))
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Workspace projects: git repositories the gateway serves over smart HTTP, behind the same keys and scopes.") {}
