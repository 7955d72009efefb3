import { Schema } from "effect"
import { ConnectionName } from "./Connection"
import { SecretName } from "./Secrets"
import { noNul } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const MAX_NOTIFY_EMAILS = 20
export const MAX_PREAMBLE_CHARS = 4000
export const MAX_TASKS_CAP = 200

/**
 * Where tasks' setup and teardown scripts run: a profile the deployment defines (never one an eval
 * set names). `python-sandbox` is the bubblewrap sandbox sandboxes use, limited to SP_EVAL_MEMORY_LIMIT.
 */
export const RUNNER_PROFILES = ["python-sandbox"] as const
export const RunnerProfile = Schema.Literal(...RUNNER_PROFILES).annotations({ message: () => `runner_profile must be one of ${RUNNER_PROFILES.join(", ")}` })

const Email = Schema.String.pipe(
  Schema.maxLength(254),
  Schema.pattern(/^[^\s@<>(),;:"\\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/, { message: () => "not an email address" })
)
export const NotifyEmails = Schema.Array(Email).pipe(Schema.maxItems(MAX_NOTIFY_EMAILS, { message: () => `notify_emails holds at most ${MAX_NOTIFY_EMAILS} addresses` }))
export const PromptPreamble = Schema.String.pipe(
  Schema.maxLength(MAX_PREAMBLE_CHARS, { message: () => `prompt_preamble must be at most ${MAX_PREAMBLE_CHARS} characters` }),
  noNul("prompt_preamble")
)
/** How many times a run attempts each task: one run's single attempt is noisy; the regression check weighs them all. */
export const MAX_ATTEMPTS = 5
export const Attempts = Schema.Int.pipe(Schema.between(1, MAX_ATTEMPTS, { message: () => `attempts must be between 1 and ${MAX_ATTEMPTS}` }))
export const MaxTasks = Schema.Int.pipe(Schema.between(1, MAX_TASKS_CAP, { message: () => `max_tasks must be between 1 and ${MAX_TASKS_CAP}` }))
const SetFolder = Schema.String.pipe(
  Schema.pattern(/^(?:\.|(?!.*(?:^|\/)\.\.?(?:\/|$))(?=.{1,256}$)[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*)$/, {
    message: () => "path is a folder of the repository: . or a relative path without . or .. segments, empty segments or a trailing /"
  })
)
const GitRef = Schema.String.pipe(Schema.pattern(/^(?!-)(?!.*\.\.)[A-Za-z0-9_./-]{1,200}$/, { message: () => "ref must be a branch, tag or commit" }))

const LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
/** A DNS name (letters, digits and inner hyphens per label) or a dotted IPv4 address, as URL parsing leaves it. */
export const REMOTE_HOST = new RegExp(`^(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*$`)

/**
 * A git remote the gateway fetches an eval set from: https (http too, for a self-hosted gateway's
 * own network), a host and a path; no user or password in it (a token is an organization secret),
 * no query or fragment.
 */
export const RemoteUrl = Schema.String.pipe(
  Schema.maxLength(500, { message: () => "url is at most 500 characters" }),
  Schema.filter(
    (url) => {
      const parsed = URL.canParse(url) ? new URL(url) : null
      if (parsed === null || !/^https?:\/\/[^/?#@\s]+\/[^?#\s]*$/.test(url)) return "url is an http(s) address of a git repository: https://host/path, without a user, password, query or fragment"
      if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return "url must be https:// (or http://)"
      // A name or an IPv4 address alone: git is told which addresses a host has as "host:port:addresses", where "-host" or "+host" mean something else (attack 41 F1).
      return REMOTE_HOST.test(parsed.hostname) ? true : "url's host must be a DNS name or an IPv4 address (not an IPv6 address: use a name)"
    },
    { identifier: "RemoteUrl" }
  )
)

/** The eval set: a folder of a workspace project's repository or of a git remote (at a branch, tag or commit), or an uploaded archive. */
export const EvalSetSource = Schema.Union(
  Schema.Struct({
    kind: Schema.Literal("repository"),
    workspace_project_id: Schema.String.pipe(Schema.pattern(/^wsp_[0-9a-f]{32}$/, { message: () => "not a workspace project's id" })),
    path: SetFolder,
    /** Default: the project's default branch. */
    ref: Schema.NullOr(GitRef)
  }).annotations(strict),
  Schema.Struct({
    kind: Schema.Literal("remote"),
    url: RemoteUrl,
    path: SetFolder,
    /** Default: the remote's default branch (its HEAD). */
    ref: Schema.NullOr(GitRef),
    /** The organization secret holding a token for a private remote (sent as HTTP Basic's password). */
    secret_name: Schema.optionalWith(Schema.NullOr(SecretName), { default: () => null })
  }).annotations(strict),
  Schema.Struct({ kind: Schema.Literal("upload"), upload_id: Schema.String.pipe(Schema.pattern(/^upl_[0-9a-f]{32}$/, { message: () => "not an upload's id" })) }).annotations(strict)
)
export type EvalSetSource = typeof EvalSetSource.Type

/** An organization's evaluation settings, as stored and shown. */
export const EvalConfig = Schema.Struct({
  connection_name: Schema.NullOr(Schema.String),
  eval_set: Schema.NullOr(EvalSetSource),
  runner_profile: Schema.NullOr(Schema.String),
  notify_emails: Schema.Array(Schema.String),
  prompt_preamble: Schema.String,
  max_tasks: Schema.Int,
  attempts: Schema.Int,
  model: Schema.NullOr(Schema.String),
  autorun: Schema.Boolean,
  updated_by: Schema.NullOr(Schema.String),
  updated_at: Schema.NullOr(Schema.String)
})
export type EvalConfig = typeof EvalConfig.Type

export const DEFAULT_EVAL_CONFIG: EvalConfig = {
  connection_name: null,
  eval_set: null,
  runner_profile: null,
  notify_emails: [],
  prompt_preamble: "",
  max_tasks: 50,
  attempts: 1,
  model: null,
  autorun: false,
  updated_by: null,
  updated_at: null
}

/** A change to the settings: the fields given replace the stored ones (null clears). */
export const UpdateEvalConfig = Schema.Struct({
  connection_name: Schema.optional(Schema.NullOr(ConnectionName)),
  eval_set: Schema.optional(Schema.NullOr(EvalSetSource)),
  runner_profile: Schema.optional(Schema.NullOr(RunnerProfile)),
  notify_emails: Schema.optional(NotifyEmails),
  prompt_preamble: Schema.optional(PromptPreamble),
  max_tasks: Schema.optional(MaxTasks),
  attempts: Schema.optional(Attempts),
  model: Schema.optional(Schema.NullOr(Schema.String.pipe(Schema.pattern(/^(?!.*\.\.)[A-Za-z0-9_.:\/-]{1,128}$/, { message: () => "model must be a model name" })))),
  autorun: Schema.optional(Schema.Boolean)
}).annotations(strict)
export type UpdateEvalConfig = typeof UpdateEvalConfig.Type

/** Whether evaluations are open to the caller, and if not, why. */
export const EvalAvailability = Schema.Struct({
  enabled: Schema.Boolean,
  staff: Schema.Boolean,
  organization_allowed: Schema.Boolean,
  evidence_storage: Schema.Literal("filesystem", "s3", "none"),
  runner_profiles: Schema.Array(Schema.String),
  reasons: Schema.Array(Schema.String)
})
export type EvalAvailability = typeof EvalAvailability.Type
