import { Schema } from "effect"
import { ConnectionName } from "./Connection"
import { noNul } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

/** The most a fetch's negotiation may send (its "have" lines). */
export const GIT_FETCH_REQUEST_MAX_BYTES = 16 * 1024 * 1024

export const WorkspaceProjectName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/, { message: () => "name must be 1-64 letters, digits, _ or -" })
)

/** A branch name git takes, kept plain: no `..`, no leading `-` or `/`, no `.lock` ending, no control or special characters. */
export const BranchName = Schema.String.pipe(
  Schema.filter(
    (name) =>
      (/^[A-Za-z0-9._/-]{1,200}$/.test(name) &&
        !name.startsWith("-") &&
        !name.startsWith("/") &&
        !name.endsWith("/") &&
        !name.endsWith(".") &&
        !name.endsWith(".lock") &&
        !name.includes("..") &&
        !name.includes("//") &&
        !name.split("/").some((part) => part.startsWith("."))) ||
      `not a branch name: use letters, digits, ".", "_", "-" and "/" (no "..", no part starting with ".", at most 200)`
  )
)

const Tags = Schema.Array(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.:-]{1,40}$/, { message: () => "a tag is 1-40 letters, digits, _ . : or -" }))).pipe(
  Schema.maxItems(20, { message: () => "at most 20 tags" })
)
const ProtectedBranches = Schema.Array(BranchName).pipe(Schema.maxItems(20, { message: () => "at most 20 protected branches" }))
const DisplayName = Schema.Trim.pipe(Schema.minLength(1, { message: () => "display_name must not be empty" }), Schema.maxLength(200), noNul("display_name"))
const Description = Schema.String.pipe(Schema.maxLength(2000, { message: () => "description must be at most 2000 characters" }), noNul("description"))

export const WorkspaceProjectStatus = Schema.Literal("active", "archived")

export const CreateWorkspaceProject = Schema.Struct({
  name: WorkspaceProjectName,
  display_name: Schema.optional(DisplayName),
  description: Schema.optionalWith(Description, { default: () => "" }),
  connection_name: Schema.optionalWith(Schema.NullOr(ConnectionName), { default: () => null }),
  default_branch: Schema.optionalWith(BranchName, { default: () => "main" }),
  protected_branches: Schema.optionalWith(ProtectedBranches, { default: () => [] }),
  tags: Schema.optionalWith(Tags, { default: () => [] })
}).annotations(strict)
export type CreateWorkspaceProject = typeof CreateWorkspaceProject.Type

export const UpdateWorkspaceProject = Schema.Struct({
  name: Schema.optionalWith(WorkspaceProjectName, { exact: true }),
  display_name: Schema.optionalWith(DisplayName, { exact: true }),
  description: Schema.optionalWith(Description, { exact: true }),
  connection_name: Schema.optionalWith(Schema.NullOr(ConnectionName), { exact: true }),
  default_branch: Schema.optionalWith(BranchName, { exact: true }),
  protected_branches: Schema.optionalWith(ProtectedBranches, { exact: true }),
  tags: Schema.optionalWith(Tags, { exact: true }),
  status: Schema.optionalWith(WorkspaceProjectStatus, { exact: true })
}).annotations(strict)
export type UpdateWorkspaceProject = typeof UpdateWorkspaceProject.Type

export const WorkspaceProject = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  display_name: Schema.String,
  description: Schema.String,
  source: Schema.String,
  connection_name: Schema.NullOr(Schema.String),
  default_branch: Schema.String,
  protected_branches: Schema.Array(Schema.String),
  tags: Schema.Array(Schema.String),
  status: WorkspaceProjectStatus,
  created_by: Schema.String,
  updated_by: Schema.String,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type WorkspaceProject = typeof WorkspaceProject.Type

export const CloneUrl = Schema.Struct({
  clone_url: Schema.String,
  default_branch: Schema.String,
  protected_branches: Schema.Array(Schema.String),
  username: Schema.String,
  instructions: Schema.String
})
