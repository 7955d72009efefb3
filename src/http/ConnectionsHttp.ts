import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { capabilitiesOf } from "../../layers/connectors/Connectors"
import { SluiceApi } from "../api/Api"
import { DB_TYPES } from "../domain/Connection"
import { CurrentPrincipal, type Principal } from "../domain/Principal"
import { ConnectionChecks } from "../services/ConnectionChecks"
import { Connections } from "../services/Connections"
import { onConnection } from "../gate/RequestState"

export const ConnectionsHttp = HttpApiBuilder.group(SluiceApi, "connections", (handlers) =>
  Effect.gen(function* () {
    const connections = yield* Connections
    const checks = yield* ConnectionChecks
    const as = <A>(f: (p: Principal) => A) => Effect.map(CurrentPrincipal, f)
    const named = <A, E, R>(name: string, f: (p: Principal) => Effect.Effect<A, E, R>) =>
      onConnection(name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, f)))

    return handlers
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => connections.list(p, urlParams)))
      .handle("create", ({ payload }) => named(payload.name, (p) => connections.create(p, payload)))
      .handle("testCredentials", ({ payload }) => named(payload.name, (p) => checks.testCredentials(p, payload)))
      .handle("get", ({ path }) => named(path.name, (p) => connections.get(p, path.name)))
      .handle("update", ({ path, payload }) => named(path.name, (p) => connections.update(p, path.name, payload)))
      .handle("remove", ({ path }) => named(path.name, (p) => connections.remove(p, path.name)))
      .handle("clone", ({ path, payload }) => named(path.name, (p) => connections.clone(p, path.name, payload.name)))
      .handle("test", ({ path }) => named(path.name, (p) => checks.test(p, path.name)))
      .handle("diagnose", ({ path }) => named(path.name, (p) => checks.diagnose(p, path.name)))
      .handle("capabilitiesAll", () => Effect.succeed({ connectors: DB_TYPES.map(capabilitiesOf) }))
      .handle("capabilities", ({ path }) =>
        named(path.name, (p) => Effect.map(connections.get(p, path.name), (c) => capabilitiesOf(c.db_type)))
      )
      .handle("poolStats", () => as(checks.poolStats))
  })
)
