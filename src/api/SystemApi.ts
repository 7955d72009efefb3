import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { InvalidRequest } from "../domain/Errors"
import { OrgSettings, Plan, SecurityStatus, SettingsPatch } from "../domain/Settings"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

export const NetworkInfo = Schema.Struct({
  hostname: Schema.String,
  /** The addresses customers allow-list: SP_EGRESS_IPS when set (NAT, proxies), else this host's own. */
  egress_ips: Schema.Array(Schema.String),
  egress_ips_source: Schema.Literal("configured", "interfaces"),
  interfaces: Schema.Array(Schema.Struct({ name: Schema.String, address: Schema.String, family: Schema.String }))
})

export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("plan", "/plan")
      .addSuccess(Plan)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get the plan", "The plan and deployment mode the organization runs under, its audit retention, and its limits: requests per minute per key and per organization, export rows, request body size, metrics streams."))
  )
  .add(
    HttpApiEndpoint.get("getSettings", "/settings")
      .addSuccess(OrgSettings)
      .annotate(RequiredScope, "admin")
      .annotateContext(docs("Get organization settings", "The organization's defaults: row limits for REST and MCP, query timeout, and which MCP tool set clients get."))
  )
  .add(
    HttpApiEndpoint.put("putSettings", "/settings")
      .setPayload(SettingsPatch)
      .addSuccess(OrgSettings)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "admin")
      .annotateContext(docs("Change organization settings", "Merges the fields given over the organization's settings and returns them all; fields left out keep their values."))
  )
  .add(
    HttpApiEndpoint.get("securityStatus", "/security/status")
      .addSuccess(SecurityStatus)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Get the security posture",
          "How this gateway is secured: deployment mode, store and tenant isolation, local access, sessions, trusted proxies, allowed hosts, rate-limit store, and counts of admin, expiring and never-used keys."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })))
      .annotate(RequiredScope, "authenticated")
      .annotateContext(
        docs(
          "Stream live metrics",
          "A server-sent event stream with a `metrics` event every 2 seconds: uptime, request, success, refusal and error counts and mean latency for the organization. At most 20 streams are open at once (429 beyond)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("networkInfo", "/network/info")
      .addSuccess(NetworkInfo)
      .annotate(RequiredScope, "admin")
      .annotateContext(
        docs("Get egress addresses", "The addresses this gateway connects to databases from, for their firewalls' allow-lists (SP_EGRESS_IPS when configured, else this host's interfaces), and its hostname.")
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "The gateway and the organization: plan and limits, settings, security posture, live metrics and egress addresses.") {}
