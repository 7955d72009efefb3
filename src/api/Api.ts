import { HttpApi, OpenApi } from "@effect/platform"
import { PayloadTooLarge } from "../domain/Errors"
import { AgentRunsApi } from "./AgentRunsApi"
import { AuditApi } from "./AuditApi"
import { BudgetsApi } from "./BudgetsApi"
import { ChatApi } from "./ChatApi"
import { ConnectionHealthApi } from "./ConnectionHealthApi"
import { ConnectionsApi } from "./ConnectionsApi"
import { ConnectionTransferApi } from "./ConnectionTransferApi"
import { ConnectionUrlsApi } from "./ConnectionUrlsApi"
import { endpointPolicies } from "./EndpointPolicies"
import { EvalsApi } from "./EvalsApi"
import { KeysApi } from "./KeysApi"
import { KnowledgeApi } from "./KnowledgeApi"
import { McpApi } from "./McpApi"
import { PiiApi } from "./PiiApi"
import { PublicApi } from "./PublicApi"
import { QueryApi, QueryStreamLine } from "./QueryApi"
import { ReportsApi } from "./ReportsApi"
import { WorkspaceProjectsApi } from "./WorkspaceProjectsApi"
import { DbBranchesApi } from "./DbBranchesApi"
import { DbtProxyApi } from "./DbtProxyApi"
import { DbtProjectsApi } from "./DbtProjectsApi"
import { NotebookSessionsApi } from "./NotebookSessionsApi"
import { SandboxesApi } from "./SandboxesApi"
import { SchemaApi } from "./SchemaApi"
import { SchemaCurationApi } from "./SchemaCurationApi"
import { SchemaWatchesApi } from "./SchemaWatchesApi"
import { SecretsApi } from "./SecretsApi"
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
  .add(AgentRunsApi)
  .add(ChatApi)
  .add(KnowledgeApi)
  .add(ReportsApi)
  .add(WorkspaceProjectsApi)
  .add(DbBranchesApi)
  .add(DbtProxyApi)
  .add(DbtProjectsApi)
  .add(SandboxesApi)
  .add(NotebookSessionsApi)
  .add(EvalsApi)
  .add(SecretsApi)
  .add(SystemApi)
  .add(McpApi)
  .addError(PayloadTooLarge)
  // Schemas the generator cannot reach from an endpoint: the NDJSON result lines that QueryApi's transform declares.
  .annotate(HttpApi.AdditionalSchemas, [QueryStreamLine])
  .annotateContext(
    OpenApi.annotations({
      title: "Sluice",
      version: "0.1.0",
      description:
        "Governed data gateway. Send an API key as `x-api-key: sp_…` or `Authorization: Bearer sp_…`; each operation names the scope it needs in `x-required-scope`. Errors are JSON objects with a `code` and a `message`.",
      servers: [{ url: "/", description: "The gateway serving this document" }],
      transform: (spec) => errorsAsSent(declareSecurity(spec))
    })
  ) {}

const SECURITY_SCHEMES = {
  apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
  bearer: { type: "http", scheme: "bearer", description: "An API key (sp_…) or, in cloud mode, a session JWT" }
}

/** Adds the credential schemes and, on each authenticated operation, the scope it needs (`x-required-scope`, and `x-any-of-scopes` where several will do). */
const declareSecurity = (spec: Record<string, any>) => {
  for (const policy of endpointPolicies(SluiceApi).values()) {
    if (!policy.authenticated) continue
    const operation = spec.paths?.[policy.path.replace(/:(\w+)/g, "{$1}")]?.[policy.method.toLowerCase()]
    if (operation === undefined) continue
    operation.security = [{ apiKey: [] }, { bearer: [] }]
    // The specification's scope; where another scope also grants the operation, every one that does.
    operation["x-required-scope"] = typeof policy.scope === "string" ? policy.scope : policy.scope?.[0]
    if (Array.isArray(policy.scope)) operation["x-any-of-scopes"] = policy.scope
  }
  return { ...spec, components: { ...spec.components, securitySchemes: SECURITY_SCHEMES } }
}

// What the request pipeline sends for a body that does not decode (src/gate/RequestPipeline.ts, normalizeError).
const INVALID_BODY = {
  type: "object",
  required: ["code", "message", "issues"],
  properties: {
    code: { type: "string", enum: ["invalid_request"] },
    message: { type: "string", description: "Every issue, as `path: message`, joined by `; `" },
    issues: { type: "array", items: { $ref: "#/components/schemas/Issue" } }
  },
  additionalProperties: false
}
const ISSUE = {
  type: "object",
  required: ["path", "message"],
  properties: {
    path: { type: "array", items: { $ref: "#/components/schemas/PropertyKey" }, description: "Where in the body the issue is" },
    message: { type: "string" }
  },
  additionalProperties: false,
  description: "One thing wrong with a request body"
}

/**
 * Errors leave as `{code, message, …}`, the bodies their schemas declare (ApiError in
 * src/domain/Errors.ts); but the platform's own HttpApiDecodeError, which the request pipeline
 * answers as invalid_request with its issues. The document describes that body, not the class.
 */
const errorsAsSent = (spec: Record<string, any>) =>
  spec.components?.schemas?.["HttpApiDecodeError"] === undefined
    ? spec
    : { ...spec, components: { ...spec.components, schemas: { ...spec.components.schemas, HttpApiDecodeError: INVALID_BODY, Issue: ISSUE } } }
