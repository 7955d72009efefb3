import * as os from "node:os"
import { ClusterWorkflowEngine, RunnerAddress, RunnerHealth, Runners, RunnerStorage, Sharding, ShardingConfig, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { WorkflowEngine } from "@effect/workflow"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { AppConfig } from "./AppConfig"

// The cluster's tables sit in Sluice's store beside its own, apart by name.
const TABLE_PREFIX = "sluice_jobs"

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
      // Unique per live process on a host; the host name tells machines apart.
      runnerAddress: Option.some(RunnerAddress.make(os.hostname(), process.pid)),
      shardsPerGroup: 64,
      entityMessagePollInterval: Duration.millis(config.jobPollMillis),
      refreshAssignmentsInterval: Duration.millis(Math.max(config.jobPollMillis, 1_000)),
      shardLockExpiration: lock,
      shardLockRefreshInterval: Duration.divide(lock, 4).pipe(Option.getOrElse(() => lock))
    })
    const runnerStorage = Option.isSome(config.databaseUrl)
      ? Layer.orDie(SqlRunnerStorage.layerWith({ prefix: TABLE_PREFIX }))
      : RunnerStorage.layerMemory
    return ClusterWorkflowEngine.layer.pipe(
      Layer.provideMerge(Sharding.layer),
      Layer.provide(Runners.layerNoop),
      Layer.provideMerge(SqlMessageStorage.layerWith({ prefix: TABLE_PREFIX })),
      Layer.provide([runnerStorage, RunnerHealth.layerNoop]),
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

/** The workflow engine of this process's runner: jobs are started, answered and polled through it, and registered on it. */
export class JobRuntime extends Effect.Service<JobRuntime>()("sluice/JobRuntime", {
  scoped: Effect.map(Layer.build(runtimeLayer), (context) => ({ engine: Context.get(context, WorkflowEngine.WorkflowEngine) }) as const)
}) {}

/** The engine as a layer, for the workflows a runner registers. */
export const JobEngineLive = Layer.effect(WorkflowEngine.WorkflowEngine, Effect.map(JobRuntime, (runtime) => runtime.engine))
