import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionName } from "../domain/Connection"
import { ConnectionHealth, ConnectionStats, HealthEvent, WindowParams } from "../domain/ConnectionHealth"
import { InvalidRequest, NotFound } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: ConnectionName })

/** What the health loop has seen: per connection, its history, and the org's totals. */
export class ConnectionHealthApi extends HttpApiGroup.make("connectionHealth")
  .add(
    HttpApiEndpoint.get("list", "/connections/health")
      .setUrlParams(WindowParams)
      .addSuccess(Schema.Struct({ items: Schema.Array(ConnectionHealth) }))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.get("stats", "/connections/stats")
      .setUrlParams(WindowParams)
      .addSuccess(ConnectionStats)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.get("get", "/connections/:name/health")
      .setPath(ByName)
      .setUrlParams(WindowParams)
      .addSuccess(ConnectionHealth)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.get("history", "/connections/:name/health/history")
      .setPath(ByName)
      .setUrlParams(PageParams)
      .addSuccess(Page(HealthEvent))
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
  )
  .middleware(Authentication)
  .prefix("/api") {}
