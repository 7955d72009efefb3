import { Schema } from "effect"

export const ALL_SCOPES = ["read", "query", "write", "execute", "dbt_proxy", "agent:run", "admin"] as const

export const Scope = Schema.Literal(...ALL_SCOPES).annotations({
  message: (issue) => ({
    message: `unknown scope ${JSON.stringify(issue.actual)}; scopes are: ${ALL_SCOPES.join(", ")}`,
    override: true
  })
})
export type Scope = typeof Scope.Type

export const Role = Schema.Literal("member", "admin")
export type Role = typeof Role.Type
