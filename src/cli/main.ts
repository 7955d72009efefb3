import { randomUUID } from "node:crypto"
import { parseArgs } from "node:util"
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Option, Schema } from "effect"
import { Foundation } from "../../app/Foundation"
import { AppConfig } from "../../layers/AppConfig"
import { CredentialCipher } from "../../layers/CredentialCipher"
import { CreateApiKey } from "../domain/ApiKey"
import { LOCAL_ORG, LOCAL_USER, OrgId, UserId } from "../domain/Ids"
import { issueMessages } from "../domain/ParseIssues"
import type { Principal } from "../domain/Principal"
import { ALL_SCOPES } from "../domain/Scope"
import { auditRow, newAuditDraft } from "../services/AuditDraft"
import type { AuditInsert } from "../repos/AuditInsert"
import { PendingChange } from "../repos/ChangeRecord"
import { OrgsRepo } from "../repos/OrgsRepo"
import { ApiKeys } from "../services/ApiKeys"
import { Audit, changeRecord, closeChangeRecord } from "../services/Audit"
import { Connections } from "../services/Connections"
import { Secrets } from "../services/Secrets"
import { exitWithStartupError } from "./StartupError"

const USAGE = `usage:
  sluice keys create --name NAME --scopes SCOPE[,SCOPE…] [--org ORG] [--expires-at ISO-8601]
  sluice credentials reencrypt     (after rotating SP_ENCRYPTION_KEY, with the old key in SP_ENCRYPTION_KEY_OLD)
  sluice migrate
  sluice worker                    (a job runner without the HTTP server; needs DATABASE_URL, the store the gateways use)
  sluice --help

Scopes: ${ALL_SCOPES.join(", ")}. The raw key is printed once, on stdout.
The commands use the store the gateway uses (DATABASE_URL, or the embedded one in SP_DATA_DIR).
To run the gateway itself: npm start (it builds, then serves on SP_PORT, default 3300).`

class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}


const createKey = (options: { name?: string | undefined; scopes?: string | undefined; org?: string | undefined; "expires-at"?: string | undefined }) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const input = yield* Schema.decodeUnknown(CreateApiKey)({
      name: options.name ?? "",
      scopes: (options.scopes ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0),
      ...(options["expires-at"] ? { expires_at: options["expires-at"] } : {})
    }).pipe(Effect.mapError(
        (error) =>
          new UsageError({
            message: issueMessages(error).join("; ")
          })
      )
    )
    if (!config.selfHosted && options.org === undefined) {
      return yield* new UsageError({ message: "--org is required when SP_DEPLOYMENT_MODE=cloud" })
    }
    const orgId = options.org === undefined ? LOCAL_ORG : OrgId.make(options.org)
    const userId = orgId === LOCAL_ORG ? LOCAL_USER : UserId.make("cli")
    yield* (yield* OrgsRepo).ensureMember({ orgId, orgName: orgId === LOCAL_ORG ? "Local" : orgId, userId, role: "admin" })
    const operator: Principal = { kind: "local", orgId, userId, keyId: null, keyPrefix: null, scopes: ALL_SCOPES, role: "admin" }
    // The key commits with its audit row, as one made over the API does.
    const started = performance.now()
    const draft = newAuditDraft(randomUUID(), "cli", operator)
    const row = (details: Record<string, unknown>): AuditInsert => {
      draft.details = { name: input.name, scopes: input.scopes, ...details }
      return auditRow(draft, { route: "sluice keys create", durationMs: performance.now() - started, outcome: "success" })
    }
    const change = changeRecord(() => row({}))
    const created = yield* (yield* ApiKeys).create(operator, input).pipe(Effect.provideService(PendingChange, change))
    yield* (yield* Audit).complete(closeChangeRecord(change), null, row({ created_key_id: created.id, prefix: created.prefix }))
    yield* Console.error(`created key ${created.id} (${created.prefix}…) in org ${orgId} with scopes ${created.scopes.join(",")}; it is shown only once:`)
    yield* Console.log(created.key)
  }).pipe(Effect.provide(Layer.mergeAll(ApiKeys.Default, OrgsRepo.Default, Audit.Default).pipe(Layer.provideMerge(Foundation))))

const reencrypt = Effect.gen(function* () {
  const report = (what: string, outcome: { checked: number; reencrypted: number; unreadable: ReadonlyArray<string> }) =>
    Console.error(
      `checked ${outcome.checked} ${what}; re-encrypted ${outcome.reencrypted} under the current key` +
        (outcome.unreadable.length === 0 ? "" : `; ${outcome.unreadable.length} decrypt under no configured key: ${outcome.unreadable.join(", ")}`)
    )
  const connections = yield* (yield* Connections).reencryptAll
  yield* report("connections with secrets", connections)
  const secrets = yield* (yield* Secrets).reencryptAll
  yield* report("organization and user secrets", secrets)
  if (connections.unreadable.length + secrets.unreadable.length > 0) return void (process.exitCode = 1)
  // Only once nothing is left under the old key: the file's old key is then no longer needed.
  if (yield* (yield* CredentialCipher).adoptCurrentKey) {
    yield* Console.error("the data dir's key file now holds the current key: a start without SP_ENCRYPTION_KEY opens these secrets")
  }
}).pipe(
  Effect.provide(Layer.mergeAll(Connections.Default, Secrets.Default, CredentialCipher.Default).pipe(Layer.provideMerge(Foundation)))
)

const migrate = Effect.gen(function* () {
  yield* Console.error("migrations are up to date")
}).pipe(Effect.provide(Foundation))

/** Runs jobs until stopped: the runner a gateway process also is, without the HTTP server and loops. */
const worker = Effect.gen(function* () {
  const config = yield* AppConfig
  if (Option.isNone(config.databaseUrl)) {
    return yield* new UsageError({ message: "a worker needs DATABASE_URL: the embedded store serves the one gateway process, which runs jobs itself" })
  }
  const { WorkerLive } = yield* Effect.promise(() => import("../../app/App"))
  yield* Console.error("sluice worker: running jobs")
  return yield* Layer.launch(WorkerLive)
}).pipe(Effect.provide(AppConfig.Default))

const main = Effect.gen(function* () {
  const { positionals, values } = yield* Effect.try({
    try: () =>
      parseArgs({
        args: process.argv.slice(2),
        allowPositionals: true,
        options: {
          name: { type: "string" },
          scopes: { type: "string" },
          org: { type: "string" },
          "expires-at": { type: "string" },
          help: { type: "boolean", short: "h" }
        }
      }),
    catch: (error) => new UsageError({ message: (error as Error).message })
  })
  const command = positionals.join(" ")
  if (values.help === true || command === "help") return yield* Console.log(USAGE)
  if (command === "keys create") return yield* createKey(values)
  if (command === "migrate") return yield* migrate
  if (command === "credentials reencrypt") return yield* reencrypt
  if (command === "worker") return yield* worker
  return yield* new UsageError({ message: command ? `unknown command: ${command}` : "no command given" })
}).pipe(
  Effect.catchTags({
    InvalidRequest: (error) => Effect.fail(new UsageError({ message: error.message })),
    Conflict: (error) => Effect.fail(new UsageError({ message: error.message }))
  }),
  Effect.catchTag("UsageError", (error) =>
    Console.error(`sluice: ${error.message}\n\n${USAGE}`).pipe(Effect.zipRight(Effect.sync(() => void (process.exitCode = 2))))
  )
)

main.pipe(exitWithStartupError, NodeRuntime.runMain({ disableErrorReporting: true }))
