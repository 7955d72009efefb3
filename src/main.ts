import { NodeRuntime } from "@effect/platform-node"
import { Layer } from "effect"
import { AppLive } from "../layers/App"
import { exitWithStartupError } from "./cli/StartupError"

Layer.launch(AppLive).pipe(exitWithStartupError, NodeRuntime.runMain({ disableErrorReporting: true }))
