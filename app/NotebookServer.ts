import { Effect, Layer } from "effect"
import { AppConfig } from "../layers/AppConfig"
import { drainingServer } from "../layers/DrainingServer"
import { shutdownPlan } from "../layers/ShutdownDeadline"
import type { RequestPipeline } from "../src/gate/RequestPipeline"
import { originsTemplate } from "../src/domain/NotebookOrigin"
import { makeNotebookProxy } from "../src/http/NotebookProxy"

/**
 * Notebook sessions' origins on SP_NOTEBOOK_PORT (0: none; cloud mode has no notebook sessions):
 * the proxy to them, behind the same pipeline, each session's Host and Origin its own.
 */
export const notebookServer = (pipeline: RequestPipeline) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const config = yield* AppConfig
      if (config.notebookPort === 0 || !config.selfHosted) return Layer.empty
      const proxy = yield* makeNotebookProxy
      return drainingServer(proxy.app, pipeline.wrapNotebooks, {
        port: config.notebookPort,
        host: config.host,
        shutdown: shutdownPlan(config.shutdownTimeoutSeconds),
        upgrade: proxy.upgrade,
        setting: "SP_NOTEBOOK_PORT"
      }).pipe(Layer.tap(() => Effect.logInfo(`Notebook sessions at ${originsTemplate(config.notebookOrigins)} (an origin each), on port ${config.notebookPort}`)))
    })
  )
