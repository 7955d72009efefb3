import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { NDJSON, type QueryStreamPart } from "../domain/Query"
import { Queries } from "../services/Queries"
import { Gate } from "../gate/Gate"
import { onQuery, onStreamedRows } from "../gate/RequestState"

export const QueryHttp = HttpApiBuilder.group(SluiceApi, "query", (handlers) =>
  Effect.gen(function* () {
    const queries = yield* Queries
    const gate = yield* Gate
    return handlers
      .handle("run", ({ payload }) =>
        Effect.gen(function* () {
          const principal = yield* CurrentPrincipal
          const { requestId, report } = yield* onQuery(payload.connection_name, payload.sql)
          const request = yield* HttpServerRequest.HttpServerRequest
          // Written as it is: every field is JSON already, and encoding the rows through the schema walks every value.
          if (!(request.headers["accept"] ?? "").includes(NDJSON)) return HttpServerResponse.unsafeJson(yield* queries.run(principal, payload, { surface: "rest", requestId, report }))
          const recheck = yield* gate.recheck
          const parts = yield* queries.stream(principal, payload, { surface: "rest", requestId, report, recheck })
          yield* onStreamedRows
          return HttpServerResponse.stream(Stream.map(parts, ndjsonLines), { contentType: NDJSON })
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

const encoder = new TextEncoder()

/** One JSON document per line; a batch of rows is one write. */
const ndjsonLines = (part: QueryStreamPart): Uint8Array => {
  if (part.type !== "rows") return encoder.encode(`${JSON.stringify(part)}\n`)
  let text = ""
  for (const row of part.rows) text += `${JSON.stringify(row)}\n`
  return encoder.encode(text)
}
