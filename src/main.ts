import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig } from "../layers/AppConfig"
import { exitWithStartupError } from "./cli/StartupError"

// Settings are checked before the drivers and services load, so a bad variable fails at once.
const main = Effect.gen(function* () {
  yield* AppConfig
  const { AppLive } = yield* Effect.promise(() => import("../app/App"))
  return yield* Layer.launch(AppLive)
}).pipe(Effect.provide(AppConfig.Default))

main.pipe(exitWithStartupError, NodeRuntime.runMain({ disableErrorReporting: true }))
