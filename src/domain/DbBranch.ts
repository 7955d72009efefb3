import { Schema } from "effect"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

/** Branch names that stand for a connection's own databases: never made or deleted as branches. */
export const PROTECTED_BRANCHES = new Set(["main", "staging", "prod"])

export const BranchProjectName = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/, { message: () => "a branch project is 1-64 letters, digits, _ or -" }))
export const DbBranchName = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/, { message: () => "a branch name is 1-64 letters, digits, _ or -" }))

export const CreateDbBranch = Schema.Struct({
  name: DbBranchName,
  /** The branch it copies: main (the connection's own database) or another branch of the project. */
  parent: Schema.optionalWith(DbBranchName, { default: () => "main" }),
  /** The job the branch serves (an agent or evaluation run): deleted once that job has ended. */
  owner_job: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,100}$/, { message: () => "owner_job is a job's id" }))),
  /** Deleted this long after it was made unless renewed (60 s to 7 days); none: kept until deleted. */
  lease_seconds: Schema.optional(Schema.Int.pipe(Schema.between(60, 7 * 86_400, { message: () => "lease_seconds must be between 60 and 604800" })))
}).annotations(strict)
export type CreateDbBranch = typeof CreateDbBranch.Type

export const DbBranchProvider = Schema.Literal("postgres_template", "hosted")

export const DbBranch = Schema.Struct({
  id: Schema.String,
  connection_name: Schema.String,
  project: Schema.String,
  name: Schema.String,
  parent: Schema.String,
  provider: DbBranchProvider,
  database: Schema.String,
  status: Schema.Literal("creating", "ready", "deleting"),
  /** What made the copy governed: the relations the connection blocks, dropped, and the tables whose PII columns were masked. */
  governance: Schema.NullOr(
    Schema.Struct({
      dropped: Schema.Array(Schema.String),
      masked: Schema.Array(Schema.String),
      /** The connection's version and its PII rules' version it was governed under: a branch of older rules opens no proxy session. */
      policy: Schema.String
    })
  ),
  owner_job: Schema.NullOr(Schema.String),
  lease_expires_at: Schema.NullOr(Schema.Date),
  created_by: Schema.String,
  created_at: Schema.Date
})
export type DbBranch = typeof DbBranch.Type

export const BranchDiffParams = Schema.Struct({
  project: BranchProjectName,
  base: Schema.optionalWith(DbBranchName, { default: () => "main" }),
  compare: DbBranchName
})
