import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { Queries } from "../services/Queries"
import { onQuery } from "./RequestState"

export const QueryHttp = HttpApiBuilder.group(SluiceApi, "query", (handlers) =>
  Effect.gen(function* () {
    const queries = yield* Queries
    return handlers
      .handle("run", ({ payload }) =>
        Effect.gen(function* () {
          const principal = yield* CurrentPrincipal
          const { requestId, report } = yield* onQuery(payload.connection_name, payload.sql)
          return yield* queries.run(principal, payload, { surface: "rest", requestId, report })
        })
      )
      .handle("explain", ({ payload }) =>
        Effect.gen(function* () {
          const principal = yield* CurrentPrincipal
          const { requestId, report } = yield* onQuery(payload.connection_name, payload.sql, "query_explain")
          return yield* queries.explain(principal, payload, { surface: "rest", requestId, report })
        })
      )
      .handle("cacheStats", () => Effect.flatMap(CurrentPrincipal, queries.cacheStats))
      .handle("invalidateCache", ({ payload }) =>
        Effect.flatMap(CurrentPrincipal, (principal) => queries.invalidateCache(principal, payload.connection_name))
      )
  })
)
