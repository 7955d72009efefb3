import { ClusterWorkflowEngine, RunnerAddress, RunnerHealth, Runners, RunnerStorage, Sharding, ShardingConfig, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { WorkflowEngine } from "@effect/workflow"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { AppConfig } from "./AppConfig"
import { RUNNER_ADDRESS, storeSessionName } from "./RunnerIdentity"
import { shutdownPlan } from "./ShutdownDeadline"

// The cluster's tables sit in Sluice's store beside its own, apart by name.
const TABLE_PREFIX = "sluice_jobs"

// How often runners check that every registered runner still has a store session.
const RUNNER_CHECK_INTERVAL = Duration.seconds(1)

/** The names of the runners' sessions on the store now (storeSessionName): a runner is alive while it has one. */
const runnerSessions = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ readonly name: string }>`select distinct application_name as name from pg_stat_activity where application_name like 'sluice %'`,
    (rows) => new Set(rows.map((row) => row.name))
  )

/**
 * For the cluster's own check: a process that dies has its jobs taken over within about a second,
 * instead of when its shard locks expire (SP_JOB_LOCK_SECONDS). A check that cannot be made
 * declares no one dead.
 */
const runnerHealthOnStore = Layer.effect(
  RunnerHealth.RunnerHealth,
  Effect.map(SqlClient.SqlClient, (sql) => ({
    isAlive: (address) =>
      runnerSessions(sql).pipe(
        Effect.map((sessions) => sessions.has(storeSessionName(address))),
        Effect.catchAllCause(() => Effect.succeed(true))
      )
  }))
)

/**
 * The same check, run by every runner: the cluster runs its own as a singleton, so when the runner
 * holding that singleton dies, no one would tell until its locks expire. A runner with no store
 * session is marked unhealthy (and healthy again once it has one); the others then take its shards.
 */
const runnerLivenessLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const runners = sql(`${TABLE_PREFIX}_runners`)
    const check = Effect.gen(function* () {
      const registered = yield* sql<{ readonly address: string; readonly healthy: boolean }>`select address, healthy from ${runners}`
      const sessions = yield* runnerSessions(sql)
      for (const { address, healthy } of registered) {
        const at = address.lastIndexOf(":")
        const alive = sessions.has(storeSessionName(RunnerAddress.make(address.slice(0, at), Number(address.slice(at + 1)))))
        if (alive !== healthy) yield* sql`update ${runners} set healthy = ${alive} where address = ${address}`
      }
    })
    yield* check.pipe(Effect.ignore, Effect.delay(RUNNER_CHECK_INTERVAL), Effect.forever, Effect.forkScoped)
  })
)

/**
 * The job runtime: this process as a cluster runner whose messages, replies and shard locks live in
 * the store, and the workflow engine on it. Runners find each other and hand work over through the
 * store alone (no port to open): each polls for the messages of the shards it holds.
 *
 * On the embedded store the runner registry is in memory: the store serves one process (its data
 * dir is locked), and the registry's lock session would take the store's only connection.
 */
const runtimeLayer = Layer.unwrapEffect(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const lock = Duration.seconds(config.jobLockSeconds)
    const sharding = ShardingConfig.layer({
      runnerAddress: Option.some(RUNNER_ADDRESS),
      shardsPerGroup: 64,
      entityMessagePollInterval: Duration.millis(config.jobPollMillis),
      refreshAssignmentsInterval: Duration.millis(Math.max(config.jobPollMillis, 1_000)),
      shardLockExpiration: lock,
      shardLockRefreshInterval: Duration.divide(lock, 4).pipe(Option.getOrElse(() => lock)),
      runnerHealthCheckInterval: RUNNER_CHECK_INTERVAL,
      // A stopping runner does not wait out a long model call: the step is interrupted and resumed elsewhere.
      entityTerminationTimeout: shutdownPlan(config.shutdownTimeoutSeconds).stepsFor
    })
    const onStore = Option.isSome(config.databaseUrl)
    const runnerStorage = onStore ? Layer.orDie(SqlRunnerStorage.layerWith({ prefix: TABLE_PREFIX })) : RunnerStorage.layerMemory
    return ClusterWorkflowEngine.layer.pipe(
      Layer.merge(onStore ? runnerLivenessLoop : Layer.empty),
      Layer.provideMerge(Sharding.layer),
      Layer.provide(Runners.layerNoop),
      Layer.provideMerge(SqlMessageStorage.layerWith({ prefix: TABLE_PREFIX })),
      Layer.provide([runnerStorage, onStore ? runnerHealthOnStore : RunnerHealth.layerNoop]),
      Layer.provide(sharding)
    )
  })
)

/**
 * Creates the cluster's tables if they are missing. Its storages run `CREATE TABLE IF NOT EXISTS`
 * when built, which fails when replicas start together (PostgreSQL's catalog races); run under
 * the migration lock, the builds that follow find the tables and create nothing.
 */
export const createJobTables = Effect.scoped(
  Layer.build(
    Layer.mergeAll(SqlMessageStorage.layerWith({ prefix: TABLE_PREFIX }), SqlRunnerStorage.layerWith({ prefix: TABLE_PREFIX })).pipe(Layer.provide(ShardingConfig.layer()))
  )
)

/**
 * The workflow engine of this process's runner (jobs are started, answered and polled through it,
 * and registered on it), and its sharding (for work that runs once across runners).
 */
export class JobRuntime extends Effect.Service<JobRuntime>()("sluice/JobRuntime", {
  scoped: Effect.map(
    Layer.build(runtimeLayer),
    (context) => ({ engine: Context.get(context, WorkflowEngine.WorkflowEngine), sharding: Context.get(context, Sharding.Sharding) }) as const
  )
}) {}

/** The engine as a layer, for the workflows a runner registers. */
export const JobEngineLive = Layer.effect(WorkflowEngine.WorkflowEngine, Effect.map(JobRuntime, (runtime) => runtime.engine))
