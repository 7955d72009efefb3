import { HttpApi } from "@effect/platform"
import { Context, Option } from "effect"
import { RateClass, RequiredScope, type ScopeRequirement } from "./Annotations"
import { Authentication } from "./Authentication"

export interface EndpointPolicy {
  readonly group: string
  readonly name: string
  readonly method: string
  readonly path: string
  readonly authenticated: boolean
  readonly scope: ScopeRequirement | null
  readonly rateClass: "auth" | "general" | "expensive"
}

export const policyKey = (method: string, path: string) => `${method} ${path}`

/** Every endpoint of an API with its declared scope and rate class, keyed by "METHOD /path". */
export const endpointPolicies = (api: HttpApi.HttpApi.Any): ReadonlyMap<string, EndpointPolicy> => {
  const policies = new Map<string, EndpointPolicy>()
  HttpApi.reflect(api as HttpApi.HttpApi<string, any, any, any>, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, mergedAnnotations, middleware }) => {
      policies.set(policyKey(endpoint.method, endpoint.path), {
        group: group.identifier,
        name: endpoint.name,
        method: endpoint.method,
        path: endpoint.path,
        authenticated: [...middleware].some((tag) => tag.key === Authentication.key),
        scope: Option.getOrNull(Context.getOption(mergedAnnotations, RequiredScope)),
        rateClass: Option.getOrElse(Context.getOption(mergedAnnotations, RateClass), () => "general" as const)
      })
    }
  })
  return policies
}
