import { Effect, Layer } from "effect"
import { AppConfig } from "../layers/AppConfig"
import { drainingServer } from "../layers/DrainingServer"
import { shutdownPlan } from "../layers/ShutdownDeadline"
import type { RequestPipeline } from "../src/gate/RequestPipeline"
import { makeNotebookProxy } from "../src/http/NotebookProxy"

/**
 * The notebook origin on SP_NOTEBOOK_PORT (0: none; cloud mode has no notebook sessions): the
 * proxy to notebook sessions, behind the same pipeline with the origin's own Host and Origin.
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
      }).pipe(Layer.tap(() => Effect.logInfo(`Notebook sessions at ${config.notebookOrigins.scheme}://*.${config.notebookOrigins.suffix}${config.notebookOrigins.port === "" ? "" : `:${config.notebookOrigins.port}`} (one origin each), on port ${config.notebookPort}`)))
    })
  )
