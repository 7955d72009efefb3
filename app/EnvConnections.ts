import { Effect, Layer } from "effect"
import { Connections } from "../src/services/Connections"
import { AppConfig } from "../layers/AppConfig"

/** Self-hosted start: mirrors SP_CONNECTION_<NAME> variables into read-only connections of the local org. */
export const EnvConnections = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (!config.selfHosted) return
    yield* (yield* Connections).syncEnv(config.envConnections)
  })
)
