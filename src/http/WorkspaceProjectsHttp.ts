import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { WorkspaceProjects } from "../services/WorkspaceProjects"
import { originReached } from "./OriginReached"

export const WorkspaceProjectsHttp = HttpApiBuilder.group(SluiceApi, "workspaceProjects", (handlers) =>
  Effect.gen(function* () {
    const projects = yield* WorkspaceProjects
    return handlers
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => projects.list(p, urlParams)))
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => projects.create(p, payload)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => projects.get(p, path.id)))
      .handle("update", ({ path, payload }) => Effect.flatMap(CurrentPrincipal, (p) => projects.update(p, path.id, payload)))
      .handle("remove", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => projects.remove(p, path.id)))
      .handle("cloneUrl", ({ path }) =>
        Effect.gen(function* () {
          const principal = yield* CurrentPrincipal
          const request = yield* HttpServerRequest.HttpServerRequest
          return yield* projects.cloneUrl(principal, path.id, originReached(request))
        })
      )
  })
)
