import { parseArgs } from "node:util"
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, ParseResult, Schema } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { CreateApiKey } from "../domain/ApiKey"
import { LOCAL_ORG, LOCAL_USER, OrgId, UserId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { ALL_SCOPES } from "../domain/Scope"
import { OrgsRepo } from "../repos/OrgsRepo"
import { ApiKeys } from "../services/ApiKeys"
import { exitWithStartupError } from "./StartupError"

const USAGE = `usage:
  sluice keys create --name NAME --scopes SCOPE[,SCOPE…] [--org ORG] [--expires-at ISO-8601]
  sluice migrate

Scopes: ${ALL_SCOPES.join(", ")}. The raw key is printed once, on stdout.`

class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

const Foundation = StoreLive.pipe(Layer.provideMerge(AppConfig.Default))

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
            message: ParseResult.ArrayFormatter.formatErrorSync(error)
              .map((issue) => issue.message.startsWith(String(issue.path[0])) ? issue.message : `${issue.path.join(".")}: ${issue.message}`)
              .join("; ")
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
    const created = yield* (yield* ApiKeys).create(operator, input)
    yield* Console.error(`created key ${created.id} (${created.prefix}…) in org ${orgId} with scopes ${created.scopes.join(",")}; it is shown only once:`)
    yield* Console.log(created.key)
  }).pipe(Effect.provide(Layer.mergeAll(ApiKeys.Default, OrgsRepo.Default).pipe(Layer.provideMerge(Foundation))))

const migrate = Effect.gen(function* () {
  yield* Console.error("migrations are up to date")
}).pipe(Effect.provide(Foundation))

const main = Effect.gen(function* () {
  const { positionals, values } = yield* Effect.try({
    try: () =>
      parseArgs({
        args: process.argv.slice(2),
        allowPositionals: true,
        options: { name: { type: "string" }, scopes: { type: "string" }, org: { type: "string" }, "expires-at": { type: "string" } }
      }),
    catch: (error) => new UsageError({ message: (error as Error).message })
  })
  const command = positionals.join(" ")
  if (command === "keys create") return yield* createKey(values)
  if (command === "migrate") return yield* migrate
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
