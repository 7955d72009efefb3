import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { NotFound, RateLimited } from "../domain/Errors"

/** The only routes without a credential: liveness, and the local key for a loopback browser in local mode. */
export class PublicApi extends HttpApiGroup.make("public", { topLevel: true })
  .add(HttpApiEndpoint.get("health", "/health").addSuccess(Schema.Struct({ status: Schema.Literal("healthy") })))
  .add(
    HttpApiEndpoint.get("localApiKey", "/local-api-key")
      .addSuccess(Schema.Struct({ key: Schema.String }))
      .addError(NotFound)
      .addError(RateLimited)
  ) {}
