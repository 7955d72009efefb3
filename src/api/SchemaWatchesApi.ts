import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { GovernedQueryErrors } from "../domain/Query"
import { Watch, Watches, WatchInput, WatchRun, WatchWithEvents } from "../domain/SchemaViews"
import { RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: Schema.String.pipe(Schema.maxLength(100)) })

/** Watches that record an event when a connection's (or some tables') schema changes; run by a leased loop, or now. */
export class SchemaWatchesApi extends HttpApiGroup.make("schemaWatches")
  .add(HttpApiEndpoint.get("list", "/schema-watches").addSuccess(Watches).addError(GovernedQueryErrors).annotate(RequiredScope, "read"))
  .add(HttpApiEndpoint.post("create", "/schema-watches").setPayload(WatchInput).addSuccess(Watch, { status: 201 }).addError(GovernedQueryErrors).annotate(RequiredScope, "admin"))
  .add(HttpApiEndpoint.get("get", "/schema-watches/:id").setPath(ById).addSuccess(WatchWithEvents).addError(GovernedQueryErrors).annotate(RequiredScope, "read"))
  .add(HttpApiEndpoint.del("remove", "/schema-watches/:id").setPath(ById).addSuccess(Schema.Void, { status: 204 }).addError(GovernedQueryErrors).annotate(RequiredScope, "admin"))
  .add(
    HttpApiEndpoint.post("run", "/schema-watches/:id/run")
      .setPath(ById)
      .addSuccess(WatchRun)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "admin")
      .annotate(RateClass, "expensive")
  )
  .middleware(Authentication)
  .prefix("/api") {}
