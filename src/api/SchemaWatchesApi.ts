import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { GovernedQueryErrors } from "../domain/Query"
import { Watch, Watches, WatchInput, WatchRun, WatchWithEvents } from "../domain/SchemaViews"
import { docs, RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: Schema.String.pipe(Schema.maxLength(100)) })

export class SchemaWatchesApi extends HttpApiGroup.make("schemaWatches")
  .add(
    HttpApiEndpoint.get("list", "/schema-watches")
      .addSuccess(Watches)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List schema watches", "The organization's schema watches, oldest first, with each one's connection, tables, interval and last run."))
  )
  .add(
    HttpApiEndpoint.post("create", "/schema-watches")
      .setPayload(WatchInput)
      .addSuccess(Watch, { status: 201 })
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "admin")
      .annotateContext(
        docs(
          "Create a schema watch",
          "Watches a connection, or only the tables matching `tables` patterns, and records an event whenever a scan finds them changed, every `interval_seconds` (60–86400, default 3600). 404 for an unknown connection; needs the `admin` scope."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/schema-watches/:id")
      .setPath(ById)
      .addSuccess(WatchWithEvents)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a schema watch", "One watch with its 20 most recent events, newest first. 404 when the organization has no watch with that id."))
  )
  .add(
    HttpApiEndpoint.del("remove", "/schema-watches/:id")
      .setPath(ById)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "admin")
      .annotateContext(docs("Delete a schema watch", "Deletes the watch and its events. 404 when the organization has no watch with that id."))
  )
  .add(
    HttpApiEndpoint.post("run", "/schema-watches/:id/run")
      .setPath(ById)
      .addSuccess(WatchRun)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "admin")
      .annotate(RateClass, "expensive")
      .annotateContext(
        docs(
          "Run a schema watch now",
          "Scans the watched connection now and records, as new events, the changes since the watch's last run that touch what it watches; a failed scan is recorded on the watch. 404 for an unknown watch."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(
    OpenApi.Description,
    "Watches that record an event when a connection's (or some tables') schema changes, run on their interval by the gateway or on demand."
  ) {}
