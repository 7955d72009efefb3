import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionName } from "../domain/Connection"
import { ConnectionHealth, ConnectionStats, HealthEvent, WindowParams } from "../domain/ConnectionHealth"
import { InvalidRequest, NotFound } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: ConnectionName })

export class ConnectionHealthApi extends HttpApiGroup.make("connectionHealth")
  .add(
    HttpApiEndpoint.get("list", "/connections/health")
      .setUrlParams(WindowParams)
      .addSuccess(Schema.Struct({ items: Schema.Array(ConnectionHealth) }))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "List connection health",
          "Every connection's health over the last `window_minutes` (default 60, at most 7 days): healthy, degraded or unhealthy, with check count, error rate, p50/p95 latency and the last error."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("stats", "/connections/stats")
      .setUrlParams(WindowParams)
      .addSuccess(ConnectionStats)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs("Summarize connection health", "The organization's totals over the last `window_minutes` (default 60, at most 7 days): connections by type and by health status, open pools, checks, error rate and latency.")
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/connections/:name/health")
      .setPath(ByName)
      .setUrlParams(WindowParams)
      .addSuccess(ConnectionHealth)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a connection's health", "One connection's health over the last `window_minutes`. 404 when the organization has no connection of that name."))
  )
  .add(
    HttpApiEndpoint.get("history", "/connections/:name/health/history")
      .setPath(ByName)
      .setUrlParams(PageParams)
      .addSuccess(Page(HealthEvent))
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "List a connection's health checks",
          "The connection's recorded checks, newest first: when, whether it succeeded, latency and the failing step. Paginated: pass `next_cursor` back as `cursor` (`limit` 1–500, default 100); 404 for an unknown connection."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "What the health loop has seen: each connection's status and check history, and the organization's totals.") {}
