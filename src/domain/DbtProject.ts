import { Schema } from "effect"
import { ConnectionName } from "./Connection"
import { noNul } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const DbtLayer = Schema.Literal("staging", "intermediate", "marts", "other")
export type DbtLayer = typeof DbtLayer.Type

export const DbtModel = Schema.Struct({
  name: Schema.String,
  path: Schema.String,
  layer: DbtLayer,
  materialized: Schema.NullOr(Schema.String),
  /** Models it selects from (ref), by name. */
  refs: Schema.Array(Schema.String),
  /** Sources it reads, as source.table. */
  sources: Schema.Array(Schema.String)
})
export type DbtModel = typeof DbtModel.Type

export const DbtSource = Schema.Struct({ source: Schema.String, name: Schema.String, schema: Schema.NullOr(Schema.String) })
export type DbtSource = typeof DbtSource.Type

export const DbtTest = Schema.Struct({ name: Schema.String, kind: Schema.Literal("generic", "singular"), model: Schema.NullOr(Schema.String) })
export type DbtTest = typeof DbtTest.Type

export const DbtCounts = Schema.Struct({
  models: Schema.Int,
  staging: Schema.Int,
  intermediate: Schema.Int,
  marts: Schema.Int,
  other: Schema.Int,
  sources: Schema.Int,
  tests: Schema.Int
})

export const DbtProjectScan = Schema.Struct({
  project_name: Schema.String,
  model_paths: Schema.Array(Schema.String),
  /** Read from target/manifest.json (what dbt compiled) rather than the models tree. */
  from_manifest: Schema.Boolean,
  models: Schema.Array(DbtModel),
  sources: Schema.Array(DbtSource),
  tests: Schema.Array(DbtTest),
  counts: DbtCounts
})
export type DbtProjectScan = typeof DbtProjectScan.Type

export const DbtProjectName = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/, { message: () => "name must be 1-64 letters, digits, _ or -" }))
const ProjectPath = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(4096), noNul("path"))
const Description = Schema.String.pipe(Schema.maxLength(2000), noNul("description"))

/** A dbt project: a folder under SP_PROJECT_ROOTS (self-hosted), or a workspace project's repository (its default branch, or `ref`). */
export const CreateDbtProject = Schema.Struct({
  name: DbtProjectName,
  path: Schema.optional(ProjectPath),
  workspace_project_id: Schema.optional(Schema.String.pipe(Schema.pattern(/^wsp_[0-9a-f]{32}$/, { message: () => "not a workspace project's id" }))),
  /** The folder of the repository that holds dbt_project.yml (default: its top). */
  subdirectory: Schema.optionalWith(
    Schema.String.pipe(Schema.pattern(/^(?:(?:[A-Za-z0-9_.-]+\/)*[A-Za-z0-9_.-]+)?$/), Schema.filter((p) => p === "" || !p.split("/").some((part) => part === ".." || part === ".") || "subdirectory must stay inside the repository")),
    { default: () => "" }
  ),
  description: Schema.optionalWith(Description, { default: () => "" }),
  connection_name: Schema.optionalWith(Schema.NullOr(ConnectionName), { default: () => null })
}).annotations(strict)
export type CreateDbtProject = typeof CreateDbtProject.Type

export const UpdateDbtProject = Schema.Struct({
  description: Schema.optionalWith(Description, { exact: true }),
  connection_name: Schema.optionalWith(Schema.NullOr(ConnectionName), { exact: true })
}).annotations(strict)
export type UpdateDbtProject = typeof UpdateDbtProject.Type

export const DbtProject = Schema.Struct({
  name: Schema.String,
  source: Schema.Literal("directory", "workspace"),
  path: Schema.NullOr(Schema.String),
  workspace_project_id: Schema.NullOr(Schema.String),
  subdirectory: Schema.String,
  description: Schema.String,
  connection_name: Schema.NullOr(Schema.String),
  counts: Schema.NullOr(DbtCounts),
  scanned_at: Schema.NullOr(Schema.Date),
  scan_error: Schema.NullOr(Schema.String),
  created_by: Schema.String,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type DbtProject = typeof DbtProject.Type

export const DbtProjectDetail = Schema.Struct({ ...DbtProject.fields, scan: Schema.NullOr(DbtProjectScan) })

export const BrowseParams = Schema.Struct({ path: Schema.optional(ProjectPath) })
export const BrowseEntry = Schema.Struct({ name: Schema.String, kind: Schema.Literal("directory", "file", "symlink"), size: Schema.NullOr(Schema.Number) })
export const BrowseListing = Schema.Struct({
  /** Null at the top: the entries are then the allowed roots themselves. */
  path: Schema.NullOr(Schema.String),
  entries: Schema.Array(BrowseEntry),
  /** Whether this folder holds a dbt_project.yml. */
  dbt_project: Schema.Boolean
})

/** What a scan reads a project's files through: a folder on disk, or a git tree. Paths are relative, with forward slashes. */
export interface ProjectFiles {
  readonly list: () => Promise<ReadonlyArray<string>>
  /** The file's text, or null when it is missing or larger than `maxBytes`. */
  readonly read: (path: string, maxBytes: number) => Promise<string | null>
}

/** Hosts of the hosted dbt build service an account may be reached on: its regions and its per-account cells (<prefix>.<cell>.dbt.com). */
const BUILD_CLOUD_HOST = /^(cloud\.getdbt\.com|emea\.dbt\.com|au\.dbt\.com|[a-z0-9-]{1,63}\.[a-z0-9-]{1,63}\.dbt\.com)$/

export const DiscoverBuildCloudProjects = Schema.Struct({
  account_id: Schema.Int.pipe(Schema.between(1, Number.MAX_SAFE_INTEGER, { message: () => "account_id is the build service's account number" })),
  /** A service token or personal access token with read access to the account's projects; used for this request only, never kept. */
  api_token: Schema.String.pipe(
    Schema.minLength(1, { message: () => "api_token is required" }),
    Schema.maxLength(4096, { message: () => "api_token must be at most 4096 characters" }),
    Schema.pattern(/^[\x21-\x7e]+$/, { message: () => "api_token is printable characters without spaces" })
  ),
  /** The account's access URL (https://<region or cell host>); absent: the gateway's SP_BUILDCLOUD_URL. */
  access_url: Schema.optional(
    Schema.String.pipe(
      Schema.filter((text) => {
        const url = URL.canParse(text) ? new URL(text) : null
        const bare = url !== null && url.protocol === "https:" && url.port === "" && url.username === "" && url.password === "" && url.search === "" && (url.pathname === "/" || url.pathname === "")
        return (bare && BUILD_CLOUD_HOST.test(url.hostname)) || "access_url must be the account's https:// access URL on the build service (cloud.getdbt.com, emea.dbt.com, au.dbt.com or <prefix>.<cell>.dbt.com)"
      })
    )
  )
}).annotations(strict)
export type DiscoverBuildCloudProjects = typeof DiscoverBuildCloudProjects.Type

export const BuildCloudProject = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  /** The project's git remote, without any credentials a URL may carry. */
  repository_url: Schema.NullOr(Schema.String),
  /** Where dbt_project.yml is inside the repository; null: its top. */
  subdirectory: Schema.NullOr(Schema.String),
  /** The warehouse type of the project's connection (postgres, snowflake, …), when it has one. */
  connection_type: Schema.NullOr(Schema.String),
  created_at: Schema.NullOr(Schema.String)
})
export type BuildCloudProject = typeof BuildCloudProject.Type

export const BuildCloudProjects = Schema.Struct({
  items: Schema.Array(BuildCloudProject),
  /** False when the account has more projects than one discovery lists (2000). */
  complete: Schema.Boolean
})
