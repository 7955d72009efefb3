import * as fs from "node:fs"
import * as path from "node:path"
import * as v8 from "node:v8"
import { Config, ConfigError, Effect, Either, Option, Redacted, Schema } from "effect"
import { ConnectionInput } from "../src/domain/Connection"
import { parseConnectionUrl } from "../src/domain/ConnectionUrl"
import { parseNotebookOrigins } from "../src/domain/NotebookOrigin"
import { issueMessages } from "../src/domain/ParseIssues"

// Validated before naming, so an error reads "SP_X: must be …" rather than losing the variable.
const boundedInt = (name: string, message: string, validation: (n: number) => boolean) =>
  Config.integer().pipe(Config.validate({ message, validation }), Config.nested(name))

const positive = (name: string) => boundedInt(name, "must be a positive integer", (n) => n > 0)
const positiveInt = (name: string, fallback: number) => positive(name).pipe(Config.withDefault(fallback))

const usd = (name: string, fallback: number) =>
  Config.number().pipe(
    Config.validate({ message: "must be a dollar amount of 0 or more", validation: (n) => Number.isFinite(n) && n >= 0 }),
    Config.nested(name),
    Config.withDefault(fallback)
  )

const list = (name: string) => Config.array(Config.string(), name).pipe(Config.withDefault([] as Array<string>))

const DeploymentMode = Config.literal("self-hosted", "cloud")("SP_DEPLOYMENT_MODE").pipe(
  Config.withDefault("self-hosted" as const)
)

const raw = Config.all({
  host: Config.string("SP_HOST").pipe(Config.withDefault("127.0.0.1")),
  port: Config.port("SP_PORT").pipe(Config.withDefault(3300)),
  webPort: boundedInt("SP_WEB_PORT", "must be a port (1-65535), or 0 for no web app", (n) => n >= 0 && n <= 65_535).pipe(
    Config.withDefault(3200)
  ),
  dataDir: Config.string("SP_DATA_DIR").pipe(Config.withDefault("./.sluice")),
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")),
  deploymentMode: DeploymentMode,
  localAccess: Config.option(Config.boolean("SP_LOCAL_ACCESS")),
  perKeyRpm: positiveInt("SP_PER_KEY_RPM", 120),
  perOrgRpm: positiveInt("SP_PER_ORG_RPM", 300),
  authRpmPerIp: positiveInt("SP_RATE_LIMIT_AUTH_RPM", 60),
  generalRpmPerIp: positiveInt("SP_RATE_LIMIT_GENERAL_RPM", 10_000),
  expensiveRpmPerIp: positiveInt("SP_RATE_LIMIT_EXPENSIVE_RPM", 1_000),
  maxExportRows: positiveInt("SP_MAX_EXPORT_ROWS", 50_000),
  jwtLeewaySeconds: boundedInt("SP_JWT_LEEWAY", "must be between 0 and 600 seconds", (n) => n >= 0 && n <= 600).pipe(
    Config.withDefault(30)
  ),
  jwksUrl: Config.option(Config.url("SP_JWKS_URL")),
  jwtIssuer: Config.option(Config.string("SP_JWT_ISSUER")),
  jwtAudience: Config.option(Config.string("SP_JWT_AUDIENCE")),
  adminUserIds: list("SP_ADMIN_USER_IDS"),
  redisUrl: Config.option(Config.redacted("REDIS_URL")),
  smtpUrl: Config.option(
    Config.redacted().pipe(
      Config.validate({ message: "must be an smtp:// or smtps:// URL", validation: (url) => /^smtps?:\/\/[^\s]+$/i.test(Redacted.value(url)) && URL.canParse(Redacted.value(url)) }),
      Config.nested("SP_SMTP_URL")
    )
  ),
  smtpFrom: Config.string().pipe(
    Config.validate({ message: "must be an address, like Sluice <sluice@example.com>", validation: (from) => /^[^\r\n<>]*<?[^\s@<>]+@[^\s@<>]+>?$/.test(from) }),
    Config.nested("SP_SMTP_FROM"),
    Config.withDefault("Sluice <sluice@localhost>")
  ),
  trustedProxies: list("SP_TRUSTED_PROXIES"),
  egressIps: list("SP_EGRESS_IPS"),
  egressAllowLoopback: Config.boolean("SP_EGRESS_ALLOW_LOOPBACK").pipe(Config.withDefault(false)),
  allowedHosts: list("SP_ALLOWED_HOSTS"),
  // One of them holds the job runner's shard locks for the process's life.
  storePoolSize: boundedInt("SP_STORE_POOL_SIZE", "must be an integer of at least 2", (n) => n >= 2).pipe(Config.withDefault(4)),
  storeTimeoutSeconds: positiveInt("SP_STORE_TIMEOUT_SECONDS", 5),
  leaseTtlSeconds: positiveInt("SP_LEASE_TTL_SECONDS", 30),
  // How long a runner that died holds its jobs before another takes them over.
  jobLockSeconds: boundedInt("SP_JOB_LOCK_SECONDS", "must be between 2 and 600 seconds", (n) => n >= 2 && n <= 600).pipe(Config.withDefault(15)),
  jobPollMillis: boundedInt("SP_JOB_POLL_MS", "must be between 50 and 60000 milliseconds", (n) => n >= 50 && n <= 60_000).pipe(Config.withDefault(500)),
  healthIntervalSeconds: positiveInt("SP_HEALTH_INTERVAL_SECONDS", 30),
  schemaLoopSeconds: positiveInt("SP_SCHEMA_LOOP_SECONDS", 30),
  // While a snapshot is this young, a relation it lacks is taken not to exist (refused where rules apply, unseen otherwise).
  schemaFreshSeconds: boundedInt("SP_SCHEMA_FRESH_SECONDS", "must be between 1 and 60 seconds", (n) => n >= 1 && n <= 60).pipe(Config.withDefault(10)),
  auditRetentionDays: Config.option(positive("SP_AUDIT_RETENTION_DAYS")),
  resultMemoryMb: Config.option(boundedInt("SP_RESULT_MEMORY_MB", "must be an integer of at least 16 (MiB)", (n) => n >= 16)),
  // Inside the 10 s a container runtime (docker stop) gives before SIGKILL.
  shutdownTimeoutSeconds: boundedInt("SP_SHUTDOWN_TIMEOUT_SECONDS", "must be between 1 and 600 seconds", (n) => n >= 1 && n <= 600).pipe(
    Config.withDefault(8)
  ),
  // The node:http lane that answers hot routes from memory before the Effect app; false: every request takes the Effect app.
  fastLane: Config.boolean("SP_FAST_LANE").pipe(Config.withDefault(true)),
  localDbDirs: list("SP_LOCAL_DB_DIRS"),
  llmProvider: Config.literal("anthropic", "openai", "openai-compatible")("SP_LLM_PROVIDER").pipe(Config.withDefault("anthropic" as const)),
  llmBaseUrl: Config.option(Config.url("SP_LLM_BASE_URL")),
  llmModel: Config.option(Config.string("SP_LLM_MODEL")),
  llmApiKey: Config.option(Config.redacted("SP_LLM_API_KEY")),
  llmMaxTokens: positiveInt("SP_LLM_MAX_TOKENS", 4096),
  // USD per million input and output tokens, "3,15"; unset: the price list's figure for known models, else 0.
  llmPrice: Config.option(Config.string("SP_LLM_PRICE_PER_MTOK")),
  // An agent's query estimated above this, or taking its conversation's estimated query spend past the next, waits for the user's approval.
  agentQueryApprovalUsd: usd("SP_AGENT_QUERY_APPROVAL_USD", 0.25),
  agentConversationBudgetUsd: usd("SP_AGENT_CONVERSATION_BUDGET_USD", 1),
  // Earlier versions of a knowledge entry kept in its history.
  knowledgeHistoryVersions: boundedInt("SP_KNOWLEDGE_HISTORY_VERSIONS", "must be between 1 and 1000", (n) => n >= 1 && n <= 1000).pipe(Config.withDefault(25)),
  // What an MCP client's proposed knowledge entry is: pending an admin's approval, or (self-hosted only) active at once.
  knowledgeProposals: Config.literal("pending", "active")("SP_KNOWLEDGE_PROPOSALS").pipe(Config.withDefault("pending" as const)),
  // How many agents' proposals, and how many MiB of them, an organization holds waiting for review.
  knowledgePendingMax: boundedInt("SP_KNOWLEDGE_PENDING_MAX", "must be between 1 and 100000", (n) => n >= 1 && n <= 100_000).pipe(Config.withDefault(200)),
  knowledgePendingMaxMb: boundedInt("SP_KNOWLEDGE_PENDING_MAX_MB", "must be between 1 and 1024", (n) => n >= 1 && n <= 1024).pipe(Config.withDefault(16)),
  // The interpreter sandboxes and notebook sessions run, under bubblewrap.
  sandboxPython: Config.string("SP_PYTHON").pipe(Config.withDefault("/usr/bin/python3")),
  sandboxMemoryMb: boundedInt("SP_SANDBOX_MEMORY_MB", "must be between 64 and 65536 (MiB)", (n) => n >= 64 && n <= 65_536).pipe(Config.withDefault(1024)),
  sandboxDiskMb: boundedInt("SP_SANDBOX_DISK_MB", "must be between 1 and 1048576 (MiB)", (n) => n >= 1 && n <= 1_048_576).pipe(Config.withDefault(1024)),
  // A sandbox idle this long is snapshotted and its process ended; a snapshot this old is deleted.
  sandboxIdleSnapshotSeconds: positiveInt("SP_NOTEBOOK_IDLE_SNAPSHOT_SECONDS", 900),
  // A notebook session nothing has used this long is ended (its open connections told why).
  // Users' notebook files, kept across sessions; a sandbox's uid must get through to its own folder, so not inside the private data dir.
  notebookDir: Config.option(Config.string("SP_NOTEBOOK_DIR")),
  // Workspace projects' bare git repositories (one folder each, named by the project's id).
  reposDir: Config.option(Config.string("SP_REPOS_DIR")),
  // Folders whose dbt projects may be registered and browsed (self-hosted only: a path on the gateway's host is no tenant's).
  projectRoots: Config.array(Config.string(), "SP_PROJECT_ROOTS").pipe(Config.withDefault([])),
  // The dbt proxy's PostgreSQL-protocol port (0: no dbt proxy): dbt and psql connect with a run token as the password.
  dbtProxyPort: boundedInt("SP_DBT_PROXY_PORT", "must be a port (1-65535), or 0 for no dbt proxy", (n) => n >= 0 && n <= 65_535).pipe(Config.withDefault(0)),
  // The hosted branching service (Neon's API) a connection's `branching` settings name a project of.
  neonApiUrl: Config.url("SP_NEON_API_URL").pipe(Config.withDefault(new URL("https://console.neon.tech/api/v2"))),
  // The hosted dbt build service (dbt Cloud's Admin API) that project discovery asks when a request names no access URL of its own.
  buildCloudUrl: Config.url("SP_BUILDCLOUD_URL").pipe(Config.withDefault(new URL("https://cloud.getdbt.com"))),
  // The most one push may send, counted as it streams (the 2 MiB cap of other requests does not apply).
  gitPushMaxMb: boundedInt("SP_GIT_PUSH_MAX_MB", "must be between 1 and 102400 (MB)", (n) => n >= 1 && n <= 102_400).pipe(Config.withDefault(500)),
  notebookIdleTimeoutSeconds: positiveInt("SP_NOTEBOOK_IDLE_TIMEOUT", 7200),
  // Notebook sessions' own origin: a port of their own, so their pages (which run whatever a notebook writes) hold neither the API's nor the web app's authority; 0: none.
  notebookPort: boundedInt("SP_NOTEBOOK_PORT", "must be a port (1-65535), or 0 for no notebook sessions", (n) => n >= 0 && n <= 65_535).pipe(Config.withDefault(3400)),
  // Those origins as browsers reach them, one per session (*: the session): http://*.localhost:<port> unless a proxy fronts them.
  notebookOrigin: Config.option(Config.string("SP_NOTEBOOK_ORIGIN")),
  sandboxSnapshotExpirationSeconds: positiveInt("SP_NOTEBOOK_SNAPSHOT_EXPIRATION_SECONDS", 7 * 24 * 3600),
  // Where evaluation evidence and eval-set uploads are kept: a folder (the self-hosted default) or an S3-compatible bucket.
  objectStore: Config.option(Config.literal("filesystem", "s3")("SP_OBJECT_STORE")),
  objectStoreDir: Config.option(Config.string("SP_OBJECT_STORE_DIR")),
  s3Bucket: Config.option(Config.string("SP_S3_BUCKET")),
  s3Region: Config.string("SP_S3_REGION").pipe(Config.withDefault("us-east-1")),
  // An S3-compatible store's URL (unset: AWS); path-style addressing unless SP_S3_FORCE_PATH_STYLE=false.
  s3Endpoint: Config.option(Config.url("SP_S3_ENDPOINT")),
  s3ForcePathStyle: Config.option(Config.boolean("SP_S3_FORCE_PATH_STYLE")),
  // Unset: the SDK's own credential chain (AWS_* variables, an instance or task role).
  s3AccessKeyId: Config.option(Config.string("SP_S3_ACCESS_KEY_ID")),
  s3SecretAccessKey: Config.option(Config.redacted("SP_S3_SECRET_ACCESS_KEY")),
  // Organizations whose platform staff may run evaluations.
  evalAllowedOrgs: list("SP_EVAL_ALLOWED_ORGS"),
  evalMaxParallelTasks: boundedInt("SP_EVAL_MAX_PARALLEL_TASKS", "must be between 1 and 32", (n) => n >= 1 && n <= 32).pipe(Config.withDefault(4)),
  evalRemoteMaxMb: boundedInt("SP_EVAL_REMOTE_MAX_MB", "must be between 1 and 65536 (MiB)", (n) => n >= 1 && n <= 65_536).pipe(Config.withDefault(512)),
  evalRegressionDropPct: boundedInt("SP_EVAL_REGRESSION_DROP_PCT", "must be between 1 and 100 (accuracy points)", (n) => n >= 1 && n <= 100).pipe(Config.withDefault(10)),
  evalMemoryLimitMb: boundedInt("SP_EVAL_MEMORY_LIMIT", "must be between 64 and 65536 (MiB)", (n) => n >= 64 && n <= 65_536).pipe(Config.withDefault(2048)),
  encryptionKey: Config.option(Config.redacted("SP_ENCRYPTION_KEY")),
  encryptionSalt: Config.option(Config.redacted("SP_ENCRYPTION_SALT")),
  encryptionOldKeys: Config.array(Config.redacted(), "SP_ENCRYPTION_KEY_OLD").pipe(Config.withDefault([]))
})

const MIB = 1024 * 1024

// A result's bytes are held several times over while it is answered (rows as objects, JSON text, the encoded body).
const defaultResultMemoryBytes = () => Math.max(16 * MIB, Math.floor(v8.getHeapStatistics().heap_size_limit / 8))

const invalid = (name: string, message: string) => ConfigError.InvalidData([name], message)

/** An existing data dir that others can write to could have its store or key files swapped: refuse it. */
const privateDataDir = (dir: string) =>
  Effect.suspend(() => {
    const stat = fs.statSync(dir, { throwIfNoEntry: false })
    if (stat === undefined || (stat.mode & 0o022) === 0) return Effect.void
    const mode = (stat.mode & 0o777).toString(8)
    return Effect.fail(invalid("SP_DATA_DIR", `${dir} is writable by group or others (mode ${mode}); run chmod 700 ${dir}`))
  })

const ENV_CONNECTION = /^SP_CONNECTION_([A-Za-z0-9_]{1,64})$/

/** SP_CONNECTION_<NAME>=<url>: connections a self-hosted operator configures without the API. */
const envConnections = (selfHosted: boolean) =>
  Effect.forEach(
    Object.entries(process.env).filter(([name]) => ENV_CONNECTION.test(name)).sort(([a], [b]) => a.localeCompare(b)),
    ([variable, url]) => {
      if (!selfHosted) return Effect.fail(invalid(variable, "connections from the environment are only read when SP_DEPLOYMENT_MODE=self-hosted"))
      const name = ENV_CONNECTION.exec(variable)![1]!.toLowerCase()
      return Either.match(
        Either.flatMap(parseConnectionUrl(url ?? ""), (fields) =>
          Schema.decodeUnknownEither(ConnectionInput)({ ...fields, name }).pipe(
            Either.mapLeft((error) => issueMessages(error).join("; "))
          )
        ),
        {
          onLeft: (message) => Effect.fail(invalid(variable, message)),
          onRight: (input) => Effect.succeed(input)
        }
      )
    }
  )

/** Every setting, read once at start. Services take this, never `process.env`. */
export class AppConfig extends Effect.Service<AppConfig>()("sluice/AppConfig", {
  effect: Effect.gen(function* () {
    const c = yield* raw
    const selfHosted = c.deploymentMode === "self-hosted"
    if (!selfHosted && Option.getOrElse(c.localAccess, () => false)) {
      return yield* Effect.fail(invalid("SP_LOCAL_ACCESS", "local access is only available when SP_DEPLOYMENT_MODE=self-hosted"))
    }
    if (!selfHosted && c.knowledgeProposals === "active") {
      return yield* Effect.fail(invalid("SP_KNOWLEDGE_PROPOSALS", "agents' proposals are active at once only when SP_DEPLOYMENT_MODE=self-hosted; in cloud an admin approves them"))
    }
    if (!selfHosted && Option.isNone(c.databaseUrl)) {
      return yield* Effect.fail(invalid("DATABASE_URL", "is required when SP_DEPLOYMENT_MODE=cloud (the embedded store serves one process)"))
    }
    // The BigQuery driver would send every connection's traffic (and its OAuth tokens) to this host.
    if (process.env["BIGQUERY_EMULATOR_HOST"] !== undefined) {
      return yield* Effect.fail(invalid("BIGQUERY_EMULATOR_HOST", "is set: the BigQuery driver would send every BigQuery connection's traffic there; unset it"))
    }
    for (const url of [c.databaseUrl, c.redisUrl]) {
      if (Option.isSome(url) && Either.isLeft(Either.try(() => new URL(Redacted.value(url.value))))) {
        const name = url === c.databaseUrl ? "DATABASE_URL" : "REDIS_URL"
        return yield* Effect.fail(invalid(name, "is not a valid URL"))
      }
    }
    if (c.notebookPort !== 0 && (c.notebookPort === c.port || c.notebookPort === c.webPort)) {
      return yield* Effect.fail(invalid("SP_NOTEBOOK_PORT", "must differ from SP_PORT and SP_WEB_PORT: notebooks are served from an origin of their own"))
    }
    const notebookOrigins = parseNotebookOrigins(Option.getOrElse(c.notebookOrigin, () => `http://*.localhost:${c.notebookPort}`))
    if (notebookOrigins === null) {
      return yield* Effect.fail(invalid("SP_NOTEBOOK_ORIGIN", "must be an origin whose first label is * (one origin per session), such as https://*.notebooks.example.com"))
    }
    if (Option.isSome(c.s3AccessKeyId) !== Option.isSome(c.s3SecretAccessKey)) {
      return yield* Effect.fail(invalid(Option.isSome(c.s3AccessKeyId) ? "SP_S3_SECRET_ACCESS_KEY" : "SP_S3_ACCESS_KEY_ID", "is required with the other S3 key (or set neither, for the SDK's own credential chain)"))
    }
    const objectStore = Option.getOrElse(c.objectStore, () => (Option.isSome(c.s3Bucket) ? "s3" : selfHosted ? "filesystem" : "none"))
    if (objectStore === "s3" && Option.isNone(c.s3Bucket)) return yield* Effect.fail(invalid("SP_S3_BUCKET", "is required when SP_OBJECT_STORE=s3"))
    const dataDir = path.resolve(c.dataDir)
    yield* privateDataDir(dataDir)
    return {
      ...c,
      resultMemoryBytes: Option.match(c.resultMemoryMb, { onNone: defaultResultMemoryBytes, onSome: (mb) => mb * MIB }),
      envConnections: yield* envConnections(selfHosted),
      dataDir,
      notebookDir: path.resolve(Option.getOrElse(c.notebookDir, () => `${dataDir}-notebooks`)),
      reposDir: path.resolve(Option.getOrElse(c.reposDir, () => path.join(dataDir, "repos"))),
      objectStore,
      objectStoreDir: path.resolve(Option.getOrElse(c.objectStoreDir, () => path.join(dataDir, "objects"))),
      projectRoots: c.projectRoots.filter((root) => root.trim().length > 0).map((root) => path.resolve(root.trim())),
      notebookOrigins,
      selfHosted,
      localAccess: selfHosted && Option.getOrElse(c.localAccess, () => true)
    } as const
  })
}) {}
