import { HttpApiBuilder } from "@effect/platform"
import { Effect, Stream } from "effect"
import { SluiceApi } from "../api/Api"
import { RateLimited } from "../domain/Errors"
import { CurrentPrincipal } from "../domain/Principal"
import { Metrics } from "../services/Metrics"
import { Posture } from "../services/Posture"
import { Settings } from "../services/Settings"
import { eventStream } from "./EventStream"
import { Gate } from "../gate/Gate"

const METRICS_INTERVAL = "2 seconds"

export const SystemHttp = HttpApiBuilder.group(SluiceApi, "system", (handlers) =>
  Effect.gen(function* () {
    const posture = yield* Posture
    const settings = yield* Settings
    const metrics = yield* Metrics
    const gate = yield* Gate

    const metricsStream = Effect.flatMap(CurrentPrincipal, (principal) => {
      if (!metrics.tryOpenStream()) {
        return Effect.fail(new RateLimited({ message: "At most 20 metrics streams may be open at once", retry_after_seconds: 15 }))
      }
      const events = Stream.tick(METRICS_INTERVAL).pipe(
        Stream.map(() => `event: metrics\ndata: ${JSON.stringify(metrics.snapshot(principal.orgId))}\n\n`),
        Stream.encodeText,
        Stream.ensuring(Effect.sync(metrics.closeStream))
      )
      return eventStream(gate, events)
    })

    return handlers
      .handle("plan", () => Effect.flatMap(CurrentPrincipal, posture.plan))
      .handle("getSettings", () => Effect.flatMap(CurrentPrincipal, settings.get))
      .handle("putSettings", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => settings.update(p, payload)))
      .handle("securityStatus", () => Effect.flatMap(CurrentPrincipal, posture.securityStatus))
      .handle("networkInfo", () => posture.networkInfo)
      .handleRaw("metrics", () => metricsStream)
  })
)
