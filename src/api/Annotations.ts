import { OpenApi } from "@effect/platform"
import { Context } from "effect"
import type { Scope } from "../domain/Scope"

/** The scope an endpoint requires, or scopes any one of which will do; "authenticated" means any valid credential. Every /api endpoint has one. */
export type ScopeRequirement = Scope | ReadonlyArray<Scope> | "authenticated"
export class RequiredScope extends Context.Tag("sluice/RequiredScope")<RequiredScope, ScopeRequirement>() {}

/** Starting and driving the built-in agent: `write`, as the specification's table gives it, or `agent:run`, whose definition is just that. */
export const DRIVES_AGENT: ReadonlyArray<Scope> = ["write", "agent:run"]

/** Which per-IP budget an endpoint draws from; unannotated endpoints are "general". */
export class RateClass extends Context.Tag("sluice/RateClass")<RateClass, "auth" | "general" | "expensive">() {}

/** An endpoint's OpenAPI summary and description, written for API users: `.annotateContext(docs("…", "…"))`. Every endpoint has both. */
export const docs = (summary: string, description: string) => OpenApi.annotations({ summary, description })

/** Declares a second form of an operation's 200 response (a stream) beside its JSON one: the generator gives each status one content type. */
export const withAlternateContent =
  (contentType: string, schema: Record<string, unknown>, description: string) =>
  (operation: Record<string, any>): Record<string, any> => {
    const ok = operation.responses[200]
    return { ...operation, responses: { ...operation.responses, 200: { ...ok, description, content: { ...ok.content, [contentType]: { schema } } } } }
  }
