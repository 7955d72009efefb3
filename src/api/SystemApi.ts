import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { InvalidRequest } from "../domain/Errors"
import { OrgSettings, Plan, SecurityStatus, SettingsPatch } from "../domain/Settings"
import { RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

export const NetworkInfo = Schema.Struct({
  hostname: Schema.String,
  /** The addresses customers allow-list: SP_EGRESS_IPS when set (NAT, proxies), else this host's own. */
  egress_ips: Schema.Array(Schema.String),
  egress_ips_source: Schema.Literal("configured", "interfaces"),
  interfaces: Schema.Array(Schema.Struct({ name: Schema.String, address: Schema.String, family: Schema.String }))
})

export class SystemApi extends HttpApiGroup.make("system")
  .add(HttpApiEndpoint.get("plan", "/plan").addSuccess(Plan).annotate(RequiredScope, "read"))
  .add(HttpApiEndpoint.get("getSettings", "/settings").addSuccess(OrgSettings).annotate(RequiredScope, "admin"))
  .add(
    HttpApiEndpoint.put("putSettings", "/settings")
      .setPayload(SettingsPatch)
      .addSuccess(OrgSettings)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "admin")
  )
  .add(HttpApiEndpoint.get("securityStatus", "/security/status").addSuccess(SecurityStatus).annotate(RequiredScope, "read"))
  .add(
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })))
      .annotate(RequiredScope, "authenticated")
  )
  .add(HttpApiEndpoint.get("networkInfo", "/network/info").addSuccess(NetworkInfo).annotate(RequiredScope, "admin"))
  .middleware(Authentication)
  .prefix("/api") {}
