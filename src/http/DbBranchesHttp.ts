import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { onConnection } from "../gate/RequestState"
import { DbBranches } from "../services/DbBranches"
import { DbtRunTokens } from "../services/DbtRunTokens"
import { dbtProfileYaml } from "../domain/DbtRunToken"
import { hostReached } from "./OriginReached"

export const DbBranchesHttp = HttpApiBuilder.group(SluiceApi, "dbBranches", (handlers) =>
  Effect.gen(function* () {
    const branches = yield* DbBranches
    const tokens = yield* DbtRunTokens
    const onIt = (name: string) => Effect.zipRight(onConnection(name), CurrentPrincipal)
    return handlers
      .handle("list", ({ path }) => Effect.flatMap(onIt(path.name), (p) => branches.list(p, path.name, path.project)))
      .handle("create", ({ path, payload }) => Effect.flatMap(onIt(path.name), (p) => branches.create(p, path.name, path.project, payload)))
      .handle("remove", ({ path }) => Effect.flatMap(onIt(path.name), (p) => branches.remove(p, path.name, path.project, path.branch)))
      .handle("diff", ({ path, urlParams }) => Effect.flatMap(onIt(path.name), (p) => branches.diff(p, path.name, urlParams.project, urlParams.base, urlParams.compare)))
      .handle("dbtProfile", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const principal = yield* onIt(path.name)
          const request = yield* HttpServerRequest.HttpServerRequest
          const minted = yield* tokens.mint(principal, { connection_name: path.name, project: urlParams.project, branch: urlParams.branch, run_id: "dbt-profile", ttl_seconds: urlParams.ttl_seconds }, hostReached(request))
          const password = JSON.stringify(minted.token)
          const note = `The password is a run token: it expires at ${minted.expires_at.toISOString()}; ask for a new profile then.`
          return { profiles_yml: dbtProfileYaml(urlParams, { ...minted, password, note }), profile: urlParams.profile, target: urlParams.target, expires_at: minted.expires_at }
        })
      )
  })
)
