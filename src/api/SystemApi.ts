import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { InvalidRequest } from "../domain/Errors"
import { OrgSettings, Plan, SecurityStatus, SettingsPatch } from "../domain/Settings"
import { RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

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
  .middleware(Authentication)
  .prefix("/api") {}
