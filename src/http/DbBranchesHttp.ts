import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { onConnection } from "../gate/RequestState"
import { DbBranches } from "../services/DbBranches"

export const DbBranchesHttp = HttpApiBuilder.group(SluiceApi, "dbBranches", (handlers) =>
  Effect.gen(function* () {
    const branches = yield* DbBranches
    const onIt = (name: string) => Effect.zipRight(onConnection(name), CurrentPrincipal)
    return handlers
      .handle("list", ({ path }) => Effect.flatMap(onIt(path.name), (p) => branches.list(p, path.name, path.project)))
      .handle("create", ({ path, payload }) => Effect.flatMap(onIt(path.name), (p) => branches.create(p, path.name, path.project, payload)))
      .handle("remove", ({ path }) => Effect.flatMap(onIt(path.name), (p) => branches.remove(p, path.name, path.project, path.branch)))
      .handle("diff", ({ path, urlParams }) => Effect.flatMap(onIt(path.name), (p) => branches.diff(p, path.name, urlParams.project, urlParams.base, urlParams.compare)))
  })
)
