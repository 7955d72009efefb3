import { describe, expect, it } from "vitest"
import { SluiceApi } from "../../src/api/Api"
import { endpointPolicies } from "../../src/api/EndpointPolicies"

const policies = [...endpointPolicies(SluiceApi).values()]

/** The specification's scope table for the routes this API serves. */
// Starting and driving the built-in agent: write, as the specification's table says, or agent:run, whose definition is to do just that.
const DRIVES_AGENT = ["write", "agent:run"]
const SPEC_SCOPES: Record<string, string | ReadonlyArray<string>> = {
  "POST /api/keys": "admin",
  "GET /api/keys": "admin",
  "DELETE /api/keys/:key_id": "admin",
  "GET /api/keys/self": "authenticated",
  "GET /api/audit": "read",
  "GET /api/mcp/client-config": "read",
  "GET /api/audit/stats": "read",
  "GET /api/audit/export": "admin",
  "GET /api/plan": "read",
  "GET /api/settings": "admin",
  "PUT /api/settings": "admin",
  "GET /api/security/status": "read",
  "GET /api/metrics": "authenticated",
  "GET /api/connections": "read",
  "POST /api/connections": "write",
  "GET /api/connections/:name": "read",
  "PUT /api/connections/:name": "write",
  "DELETE /api/connections/:name": "write",
  "POST /api/connections/:name/clone": "write",
  "POST /api/connections/test-credentials": "write",
  "POST /api/connections/:name/test": "read",
  "POST /api/connections/:name/diagnose": "read",
  "GET /api/connectors/capabilities": "read",
  "GET /api/connections/:name/capabilities": "read",
  "GET /api/pool/stats": "read",
  "GET /api/connections/health": "read",
  "GET /api/connections/:name/health": "read",
  "GET /api/connections/:name/health/history": "read",
  "GET /api/connections/stats": "read",
  "POST /api/connections/parse-url": "read",
  "POST /api/connections/validate-url": "read",
  "POST /api/connections/build-url": "read",
  "POST /api/connections/export": "write",
  "POST /api/connections/import": "write",
  "GET /api/network/info": "admin",
  "POST /api/query": "query",
  "POST /api/query/explain": "query",
  "GET /api/cache/stats": "read",
  "POST /api/cache/invalidate": "write",
  "POST /api/budget": "write",
  "GET /api/connections/:name/pii": "read",
  "PUT /api/connections/:name/pii": "write",
  "POST /api/connections/:name/detect-pii": "write",
  "POST /api/connections/:name/detect-and-save-pii": "write",
  "GET /api/connections/:name/schema": "read",
  "GET /api/connections/:name/schema/grouped": "read",
  "GET /api/connections/:name/schema/compact": "read",
  "GET /api/connections/:name/schema/ddl": "read",
  "GET /api/connections/:name/schema/overview": "read",
  "GET /api/connections/:name/schema/search": "read",
  "GET /api/connections/:name/schema/filter": "read",
  "GET /api/connections/:name/schema/refresh-status": "read",
  "GET /api/connections/:name/schema/relationships": "read",
  "GET /api/connections/:name/schema/join-paths": "read",
  "GET /api/connections/:name/schema/link": "read",
  "GET /api/connections/:name/schema/enriched": "read",
  "GET /api/connections/:name/schema/endorsements": "read",
  "PUT /api/connections/:name/schema/endorsements": "write",
  "GET /api/connections/:name/annotations": "read",
  "POST /api/connections/:name/annotations/generate": "write",
  "POST /api/connections/:name/schema/refine": "write",
  "POST /api/connections/:name/schema/correct-columns": "write",
  "GET /api/connections/:name/semantic-model": "read",
  "PUT /api/connections/:name/semantic-model": "write",
  "POST /api/connections/:name/semantic-model/generate": "write",
  "GET /api/connections/:name/schema/agent-context": "read",
  "GET /api/connections/:name/schema/samples": "query",
  "GET /api/connections/:name/schema/sample-values": "query",
  "POST /api/connections/:name/schema/explore": "query",
  "POST /api/connections/:name/schema/explore-columns": "query",
  "GET /api/connections/:name/schema/diff": "read",
  "GET /api/connections/:name/schema/diff/:compare": "read",
  "GET /api/connections/:name/schema/diff-history": "read",
  "GET /api/schema/changes": "read",
  "POST /api/connections/:name/schema/refresh": "write",
  "POST /api/connections/schema/warmup": "write",
  "GET /api/schema-cache/stats": "read",
  "GET /api/schema-watches": "read",
  "POST /api/schema-watches": "admin",
  "GET /api/schema-watches/:id": "read",
  "DELETE /api/schema-watches/:id": "admin",
  "POST /api/schema-watches/:id/run": "admin",
  "POST /api/schema-cache/invalidate": "write",
  "GET /api/budget": "read",
  "GET /api/budget/:id": "read",
  "DELETE /api/budget/:id": "write",
  // The specification says write for starting and driving runs; issue 19 gives that to agent:run, the scope made for it
  // (a run spends model tokens as its key), so a write key cannot spend and an agent:run key can do nothing else.
  "POST /api/agent-runs": DRIVES_AGENT,
  "GET /api/agent-runs": "read",
  "GET /api/agent-runs/:id": "read",
  "PATCH /api/agent-runs/:id": DRIVES_AGENT,
  "GET /api/agent-runs/:id/events": "read",
  "POST /api/chat/conversations": "write",
  "GET /api/chat/conversations": "read",
  "GET /api/chat/conversations/:id": "read",
  "POST /api/chat/conversations/:id/messages": DRIVES_AGENT,
  "GET /api/chat/conversations/:id/messages": "read",
  // Beyond the specification, as its chat users expect: follow, cancel, answer and approve a conversation's run.
  "GET /api/chat/conversations/:id/runs/:run_id/events": "read",
  "POST /api/chat/conversations/:id/runs/:run_id/cancel": DRIVES_AGENT,
  "POST /api/chat/conversations/:id/runs/:run_id/clarification": DRIVES_AGENT,
  "POST /api/chat/conversations/:id/runs/:run_id/approval": DRIVES_AGENT,
  "POST /api/chat/traces/threads": "write",
  "GET /api/chat/traces/threads": "read",
  "GET /api/chat/traces/threads/:id/events": "read",
  "GET /api/analysis-trails/resolve": "read",
  "GET /api/org/secrets": "read",
  "PUT /api/org/secrets": "write",
  "GET /api/org/secrets/llm-key": "execute",
  "GET /api/user/secrets": "read",
  "PUT /api/user/secrets": "write",
  "GET /api/knowledge": "read",
  "GET /api/knowledge/:id": "read",
  "POST /api/knowledge": "admin",
  "PUT /api/knowledge/:id": "admin",
  "DELETE /api/knowledge/:id": "admin",
  "POST /api/knowledge/:id/approve": "admin",
  "GET /api/knowledge/:id/edits": "read",
  "GET /api/knowledge/retrievals": "read",
  "GET /api/knowledge/usage": "read",
  "GET /api/reports": "read",
  "GET /api/reports/:id": "read",
  "POST /api/reports": "admin",
  "PATCH /api/reports/:id": "admin",
  "DELETE /api/reports/:id": "admin",
  "GET /api/sandboxes": "read",
  "GET /api/sandboxes/:id": "read",
  "POST /api/sandboxes": "execute",
  "DELETE /api/sandboxes/:id": "execute",
  "POST /api/sandboxes/:id/execute": "execute",
  "POST /api/notebook-sessions": "execute",
  "GET /api/notebook-sessions/:id": "read",
  "DELETE /api/notebook-sessions/:id": "write",
  "POST /api/notebook-sessions/:id/ping": "read",
  "GET /api/workspace-projects": "read",
  "POST /api/workspace-projects": "write",
  "GET /api/workspace-projects/:id": "read",
  "PUT /api/workspace-projects/:id": "write",
  "DELETE /api/workspace-projects/:id": "write",
  "GET /api/workspace-projects/:id/clone-url": "read",
  "GET /api/connections/:name/dbbranch/projects/:project/branches": "read",
  "POST /api/connections/:name/dbbranch/projects/:project/branches": "write",
  "DELETE /api/connections/:name/dbbranch/projects/:project/branches/:branch": "write",
  "GET /api/connections/:name/dbbranch/branch-diff": "read",
  "GET /api/connections/:name/dbbranch/dbt-profile": "write",
  "GET /api/evals/availability": "read",
  "GET /api/evals/config": "read",
  "PUT /api/evals/config": "admin",
  "GET /api/evals/tasks": "read",
  "POST /api/evals/runs": "admin",
  "GET /api/evals/runs": "read",
  "GET /api/evals/accuracy": "read",
  "GET /api/evals/runs/:id": "read",
  "GET /api/evals/runs/:id/progress": "read",
  "GET /api/evals/runs/:id/events": "read",
  "GET /api/evals/sandboxes": "read",
  "GET /api/evals/sandboxes/:name/events": "read",
  "GET /api/evals/sandboxes/:name/logs/stream": "read",
  "POST /api/evals/runs/:id/regrade": "admin",
  "GET /api/evals/runs/:id/tasks/:task/transcript": "query",
  "GET /api/evals/runs/:id/tasks/:task/setup/:phase/log": "query",
  "GET /api/evals/runs/:id/artifacts": "query",
  "GET /api/evals/runs/:id/artifacts/:task/:file": "query",
  "GET /api/evals/runs/:id/export": "query",
  "POST /api/evals/upload/initiate": "write",
  "POST /api/evals/upload/complete": "write",
  "POST /api/evals/upload/abort": "write",
  "POST /api/dbt-proxy/run-tokens": "dbt_proxy",
  "GET /api/projects": "read",
  "POST /api/projects": "write",
  "GET /api/projects/:name": "read",
  "PUT /api/projects/:name": "write",
  "DELETE /api/projects/:name": "write",
  "POST /api/projects/:name/scan": "write",
  "GET /api/files/browse": "write",
  "POST /api/buildcloud/projects": "admin"
}

const PUBLIC_ROUTES = ["GET /health", "GET /local-api-key"]

describe("endpoint scopes", () => {
  it("every /api endpoint is authenticated and declares a scope", () => {
    const api = policies.filter((p) => p.path.startsWith("/api/"))
    expect(api.length).toBeGreaterThan(0)
    for (const policy of api) {
      expect(policy.authenticated, `${policy.method} ${policy.path}`).toBe(true)
      expect(policy.scope, `${policy.method} ${policy.path}`).not.toBeNull()
    }
  })

  it("only /health and /local-api-key are served without the authentication middleware", () => {
    const open = policies.filter((p) => !p.authenticated).map((p) => `${p.method} ${p.path}`)
    expect(open.sort()).toEqual([...PUBLIC_ROUTES].sort())
  })

  it("scopes match the specification's table, route for route", () => {
    const declared = Object.fromEntries(
      policies.filter((p) => p.authenticated).map((p) => [`${p.method} ${p.path}`, p.scope])
    )
    expect(declared).toEqual(SPEC_SCOPES)
  })

  it("key and auth routes draw from the strict per-IP budget, export from the expensive one", () => {
    const byRoute = Object.fromEntries(policies.map((p) => [`${p.method} ${p.path}`, p.rateClass]))
    expect(byRoute["POST /api/keys"]).toBe("auth")
    expect(byRoute["DELETE /api/keys/:key_id"]).toBe("auth")
    expect(byRoute["GET /api/audit/export"]).toBe("expensive")
    expect(byRoute["GET /api/plan"]).toBe("general")
  })
})
