import { Schema } from "effect"
import { ConnectionName } from "./Connection"
import { BranchProjectName, DbBranchName } from "./DbBranch"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const MintRunToken = Schema.Struct({
  connection_name: ConnectionName,
  project: BranchProjectName,
  branch: DbBranchName,
  /** The run the token is for (a dbt invocation, an evaluation task): named in each statement's audit row. */
  run_id: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.:-]{1,100}$/, { message: () => "run_id is 1-100 letters, digits, _ . : or -" })), {
    default: () => "manual"
  }),
  ttl_seconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(60, 86_400, { message: () => "ttl_seconds must be between 60 and 86400" })), { default: () => 3600 })
}).annotations(strict)
export type MintRunToken = typeof MintRunToken.Type

/** Where dbt connects with a run token: the proxy, never the connection's own server or password. */
export const RunToken = Schema.Struct({
  token: Schema.String,
  expires_at: Schema.Date,
  host: Schema.String,
  port: Schema.Int,
  user: Schema.String,
  dbname: Schema.String,
  run_id: Schema.String
})
export type RunToken = typeof RunToken.Type

export const DbtProfileParams = Schema.Struct({
  project: BranchProjectName,
  branch: DbBranchName,
  profile: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/)), { default: () => "default" }),
  target: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/)), { default: () => "sluice" }),
  schema: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/)), { default: () => "public" }),
  ttl_seconds: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.between(60, 86_400)), { default: () => 3600 })
})

export const DbtProfile = Schema.Struct({
  profiles_yml: Schema.String,
  profile: Schema.String,
  target: Schema.String,
  expires_at: Schema.Date
})

/** Where a profile points and what its password is (YAML text: a quoted run token, or an env_var() call). */
export interface ProfileTarget {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly dbname: string
  readonly password: string
  readonly note: string
}

/** A profiles.yml with one postgres target: the dbt proxy, a run token as its password. */
export const dbtProfileYaml = (params: { readonly profile: string; readonly target: string; readonly schema: string }, target: ProfileTarget) =>
  [
    `${params.profile}:`,
    `  target: ${params.target}`,
    "  outputs:",
    `    ${params.target}:`,
    "      type: postgres",
    `      host: ${JSON.stringify(target.host)}`,
    `      port: ${target.port}`,
    `      user: ${target.user}`,
    `      password: ${target.password}`,
    `      dbname: ${target.dbname}`,
    `      schema: ${params.schema}`,
    "      threads: 4",
    "      sslmode: disable",
    `      # ${target.note}`,
    ""
  ].join("\n")
