import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { NotFound, RateLimited } from "../domain/Errors"
import { docs } from "./Annotations"

/** What /health answers while the gateway serves requests. */
export const HEALTHY = { status: "healthy" } as const

/** The only routes without a credential: liveness, and the local key for a loopback browser in local mode. */
export class PublicApi extends HttpApiGroup.make("public", { topLevel: true })
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(Schema.Struct({ status: Schema.Literal("healthy") }))
      .annotateContext(docs("Liveness check", "Answers `{\"status\":\"healthy\"}` while the gateway serves requests. Needs no credential."))
  )
  .add(
    HttpApiEndpoint.get("localApiKey", "/local-api-key")
      .addSuccess(Schema.Struct({ key: Schema.String }))
      .addError(NotFound)
      .addError(RateLimited)
      .annotateContext(
        docs(
          "Get the local API key",
          "In self-hosted local mode, gives a browser on the gateway's own machine (loopback) the local admin key, so the web app signs in without setup. Anywhere else, or with local access turned off, it answers 404."
        )
      )
  )
  .annotate(OpenApi.Description, "Routes that need no credential: liveness and, on the gateway's own machine, the local API key.") {}
