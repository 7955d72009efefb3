import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { Connections } from "../services/Connections"
import { PiiDetector } from "../services/PiiDetector"
import { onChildQueries, onConnection } from "../gate/RequestState"

export const PiiHttp = HttpApiBuilder.group(SluiceApi, "pii", (handlers) =>
  Effect.gen(function* () {
    const connections = yield* Connections
    const detector = yield* PiiDetector
    return handlers
      .handle("get", ({ path }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => connections.piiPolicy(p, path.name))))
      )
      .handle("put", ({ path, payload }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => connections.setPiiRules(p, path.name, payload.rules))))
      )
      .handle("detect", ({ path }) =>
        Effect.gen(function* () {
          const sink = yield* onChildQueries(path.name, "pii_detect")
          return yield* detector.detect(yield* CurrentPrincipal, path.name, { surface: "rest", ...sink })
        })
      )
      .handle("detectAndSave", ({ path }) =>
        Effect.gen(function* () {
          const sink = yield* onChildQueries(path.name, "pii_detect")
          return yield* detector.detectAndSave(yield* CurrentPrincipal, path.name, { surface: "rest", ...sink })
        })
      )
  })
)
