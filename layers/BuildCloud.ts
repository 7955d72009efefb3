import { Effect, Schema } from "effect"
import type { BuildCloudProject, DiscoverBuildCloudProjects } from "../src/domain/DbtProject"
import { InvalidRequest, NotFound, Unavailable } from "../src/domain/Errors"
import { AppConfig } from "./AppConfig"
import { requestJson } from "./JsonService"

const PAGE = 100
// An account with more projects than this is listed in part; the answer says so.
const MOST = 2_000
// dbt Cloud's project states: 1 active, 2 deleted.
const DELETED = 2

const Page = Schema.Struct({
  data: Schema.Array(
    Schema.Struct({
      id: Schema.Int,
      name: Schema.String,
      state: Schema.optionalWith(Schema.NullOr(Schema.Int), { default: () => null }),
      dbt_project_subdirectory: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
      created_at: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
      repository: Schema.optionalWith(Schema.NullOr(Schema.Struct({ remote_url: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }) })), { default: () => null }),
      connection: Schema.optionalWith(Schema.NullOr(Schema.Struct({ type: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }) })), { default: () => null })
    })
  ),
  extra: Schema.optionalWith(
    Schema.Struct({ pagination: Schema.optional(Schema.Struct({ count: Schema.Int, total_count: Schema.Int })) }),
    { default: () => ({}) }
  )
})

/**
 * A git remote as shown: without a user name or token before an `@`, nor a query or fragment (where
 * tokens ride too), whether or not a URL parser reads it (scp-like remotes, `host:group` paths).
 */
const withoutCredentials = (remote: string | null) => {
  if (remote === null) return null
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(remote)?.[0] ?? ""
  const rest = remote.slice(scheme.length).replace(/[?#].*$/s, "")
  const slash = rest.indexOf("/")
  const authority = slash < 0 ? rest : rest.slice(0, slash)
  const at = authority.lastIndexOf("@")
  return scheme + (at < 0 ? rest : rest.slice(at + 1))
}

/**
 * Discovery of dbt projects on a hosted dbt build service (dbt Cloud's Admin API v3): the account's
 * projects with their git remote, subdirectory and warehouse type, for an admin to register. The
 * token is used for the one listing and kept nowhere. The service is the gateway's SP_BUILDCLOUD_URL
 * unless the request names the account's own access URL, which must be one of the service's hosts.
 */
export class BuildCloud extends Effect.Service<BuildCloud>()("sluice/BuildCloud", {
  effect: Effect.gen(function* () {
    const configured = (yield* AppConfig).buildCloudUrl.toString().replace(/\/+$/, "")

    const projects = Effect.fn("BuildCloud.projects")(function* (input: DiscoverBuildCloudProjects) {
      const base = (input.access_url ?? configured).replace(/\/+$/, "")
      const found: Array<BuildCloudProject> = []
      for (let offset = 0; offset < MOST; offset += PAGE) {
        const page = yield* requestJson(
          "build service",
          { method: "GET", url: `${base}/api/v3/accounts/${input.account_id}/projects/?limit=${PAGE}&offset=${offset}`, headers: { authorization: `Token ${input.api_token}` }, secrets: [input.api_token] },
          Page
        ).pipe(Effect.catchTag("ServiceRefused", () => Effect.fail(new InvalidRequest({ message: "The build service refused the API token, or the token may not read this account's projects" }))))
        if (page === null) return yield* new NotFound({ message: `The build service has no account ${input.account_id} (or the token cannot see it)` })
        if (page.data.length > PAGE) return yield* new Unavailable({ message: `The build service answered with more than ${PAGE} projects on a page; it was not read` })
        for (const p of page.data) {
          if (p.state === DELETED) continue
          found.push({
            id: p.id,
            name: p.name,
            repository_url: withoutCredentials(p.repository?.remote_url ?? null),
            subdirectory: p.dbt_project_subdirectory,
            connection_type: p.connection?.type ?? null,
            created_at: p.created_at
          })
        }
        const total = page.extra.pagination?.total_count
        if (page.data.length < PAGE || (total !== undefined && offset + PAGE >= total)) return { items: found, complete: true }
      }
      return { items: found, complete: false }
    })

    return { projects } as const
  }),
  dependencies: [AppConfig.Default]
}) {}
