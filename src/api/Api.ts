import { HttpApi, OpenApi } from "@effect/platform"
import { PayloadTooLarge } from "../domain/Errors"
import { AuditApi } from "./AuditApi"
import { BudgetsApi } from "./BudgetsApi"
import { ConnectionHealthApi } from "./ConnectionHealthApi"
import { ConnectionsApi } from "./ConnectionsApi"
import { ConnectionTransferApi } from "./ConnectionTransferApi"
import { ConnectionUrlsApi } from "./ConnectionUrlsApi"
import { endpointPolicies } from "./EndpointPolicies"
import { KeysApi } from "./KeysApi"
import { McpApi } from "./McpApi"
import { PiiApi } from "./PiiApi"
import { PublicApi } from "./PublicApi"
import { QueryApi } from "./QueryApi"
import { SchemaApi } from "./SchemaApi"
import { SchemaCurationApi } from "./SchemaCurationApi"
import { SchemaWatchesApi } from "./SchemaWatchesApi"
import { SystemApi } from "./SystemApi"

export class SluiceApi extends HttpApi.make("sluice")
  .add(PublicApi)
  .add(KeysApi)
  .add(AuditApi)
  .add(ConnectionHealthApi)
  .add(ConnectionUrlsApi)
  .add(ConnectionTransferApi)
  .add(ConnectionsApi)
  .add(QueryApi)
  .add(BudgetsApi)
  .add(PiiApi)
  .add(SchemaApi)
  .add(SchemaCurationApi)
  .add(SchemaWatchesApi)
  .add(SystemApi)
  .add(McpApi)
  .addError(PayloadTooLarge)
  .annotateContext(
    OpenApi.annotations({
      title: "Sluice",
      version: "0.1.0",
      description: "Governed data gateway. Send an API key as `x-api-key: sp_…` or `Authorization: Bearer sp_…`.",
      transform: (spec) => declareSecurity(spec)
    })
  ) {}

const SECURITY_SCHEMES = {
  apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
  bearer: { type: "http", scheme: "bearer", description: "An API key (sp_…) or, in cloud mode, a session JWT" }
}

/** Adds the credential schemes and, on each authenticated operation, the scope it needs (`x-required-scope`). */
const declareSecurity = (spec: Record<string, any>) => {
  for (const policy of endpointPolicies(SluiceApi).values()) {
    if (!policy.authenticated) continue
    const operation = spec.paths?.[policy.path.replace(/:(\w+)/g, "{$1}")]?.[policy.method.toLowerCase()]
    if (operation === undefined) continue
    operation.security = [{ apiKey: [] }, { bearer: [] }]
    operation["x-required-scope"] = policy.scope
  }
  return { ...spec, components: { ...spec.components, securitySchemes: SECURITY_SCHEMES } }
}
