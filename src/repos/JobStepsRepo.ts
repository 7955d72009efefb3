import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { storeErrors } from "./StoreErrors"

/** A claim not kept fresh for this long (its runner alive but stuck), or held by a runner with no store session left, is taken over. */
const STALE_SECONDS = 30

const Step = Schema.Struct({ jobId: Schema.String, step: Schema.String })
const StepOf = Schema.Struct({ ...Step.fields, runner: Schema.String })

/** The job kit's record of who runs each step of a durable job, and what it returned. */
export class JobStepsRepo extends Effect.Service<JobStepsRepo>()("sluice/JobStepsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const failures = storeErrors("job steps")

    const claimStep = SqlSchema.findOne({
      Request: StepOf,
      Result: Schema.Struct({ claimed: Schema.Boolean }),
      execute: ({ jobId, step, runner }) => sql`insert into job_steps (job_id, step, runner) values (${jobId}, ${step}, ${runner})
        on conflict (job_id, step) do update set runner = excluded.runner, heartbeat_at = now()
        where job_steps.done_at is null and (
          job_steps.runner = excluded.runner
          or job_steps.heartbeat_at < now() - make_interval(secs => ${STALE_SECONDS})
          or not exists (select 1 from pg_stat_activity a where a.application_name = job_steps.runner))
        returning true as claimed`
    })
    /** Takes the step for `runner` unless it is done or another live runner runs it; true when `runner` holds it afterwards. */
    const claim = Effect.fn("JobStepsRepo.claim")((jobId: string, step: string, runner: string) => claimStep({ jobId, step, runner }).pipe(Effect.map(Option.isSome)), failures)

    const doneStep = SqlSchema.findOne({
      Request: Step,
      // Any JSON a step's success schema encodes to; the kit decodes it with that schema.
      Result: Schema.Struct({ result: Schema.parseJson() }),
      execute: ({ jobId, step }) => sql`select result from job_steps where job_id = ${jobId} and step = ${step} and done_at is not null`
    })
    /** The step's result once it is done (null while not). */
    const resultOf = Effect.fn("JobStepsRepo.resultOf")((jobId: string, step: string) => doneStep({ jobId, step }).pipe(Effect.map(Option.getOrNull)), failures)

    const heartbeat = Effect.fn("JobStepsRepo.heartbeat")(
      (jobId: string, step: string, runner: string) =>
        sql`update job_steps set heartbeat_at = now() where job_id = ${jobId} and step = ${step} and runner = ${runner} and done_at is null`.pipe(Effect.asVoid),
      failures
    )

    const finish = Effect.fn("JobStepsRepo.finish")(
      (jobId: string, step: string, runner: string, result: unknown) =>
        sql`update job_steps set done_at = now(), result = ${JSON.stringify(result ?? null)}
          where job_id = ${jobId} and step = ${step} and runner = ${runner}`.pipe(Effect.asVoid),
      failures
    )

    /** Gives the step up at once (its run was stopped before it finished), for another runner to take. */
    const release = Effect.fn("JobStepsRepo.release")(
      (jobId: string, step: string, runner: string) =>
        sql`delete from job_steps where job_id = ${jobId} and step = ${step} and runner = ${runner} and done_at is null`.pipe(Effect.asVoid),
      failures
    )

    /** The job has ended: its steps' records go. */
    const forget = Effect.fn("JobStepsRepo.forget")((jobId: string) => sql`delete from job_steps where job_id = ${jobId}`.pipe(Effect.asVoid), failures)

    /**
     * Deletes the records no step will read again, whatever became of their job: a done step's after
     * an hour (its workflow journaled the result long since, so the step is never run again) and a
     * claim no one has kept for a day.
     */
    const sweep = sql`delete from job_steps
      where done_at < now() - interval '1 hour' or (done_at is null and heartbeat_at < now() - interval '1 day')`.pipe(
      Effect.asVoid,
      Effect.withSpan("JobStepsRepo.sweep"),
      failures
    )

    return { claim, resultOf, heartbeat, finish, release, forget, sweep } as const
  })
}) {}
