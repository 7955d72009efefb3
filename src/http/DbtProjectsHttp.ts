import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { BuildCloud } from "../../layers/BuildCloud"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { DbtProjects } from "../services/DbtProjects"

export const DbtProjectsHttp = HttpApiBuilder.group(SluiceApi, "dbtProjects", (handlers) =>
  Effect.gen(function* () {
    const projects = yield* DbtProjects
    const buildCloud = yield* BuildCloud
    return handlers
      .handle("list", () => Effect.flatMap(CurrentPrincipal, (p) => projects.list(p)))
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => projects.create(p, payload)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => projects.get(p, path.name)))
      .handle("update", ({ path, payload }) => Effect.flatMap(CurrentPrincipal, (p) => projects.update(p, path.name, payload)))
      .handle("remove", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => projects.remove(p, path.name)))
      .handle("scan", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => projects.scan(p, path.name)))
      .handle("browse", ({ urlParams }) => projects.browse(urlParams.path))
      .handle("discoverBuildCloud", ({ payload }) => buildCloud.projects(payload))
  })
)
