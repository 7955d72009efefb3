import { type SqlClient, SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Schema } from "effect"
import type { OrgId } from "../domain/Ids"
import { JobEvent } from "../domain/JobEvent"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

/**
 * Writes a step's event of job `jobId` of `kind` once, inside the caller's transaction: nothing when
 * the step's event is there (the step ran again after a crash); true when it wrote it, so a kind's
 * repo can add what the step did to its job's row in the same transaction. Writers of one job take
 * turns (a transaction lock), so each reads the seq the last one wrote: two steps written at once
 * would otherwise both take max(seq) + 1, and one would fail.
 */
export const appendJobEvent = (
  sql: SqlClient.SqlClient,
  event: { readonly kind: string; readonly orgId: OrgId; readonly jobId: string; readonly step: string; readonly type: string; readonly data: Record<string, unknown> }
) =>
  sql`select pg_advisory_xact_lock(hashtextextended(${`${event.kind}/${event.jobId}`}, 0))`.pipe(
    Effect.zipRight(sql`insert into job_events (kind, job_id, org_id, seq, step, type, data)
      select ${event.kind}, ${event.jobId}, ${event.orgId}, coalesce(max(seq), 0) + 1, ${event.step}, ${event.type}, ${JSON.stringify(event.data)}::jsonb
        from job_events where kind = ${event.kind} and job_id = ${event.jobId}
      on conflict (kind, job_id, step) do nothing
      returning 1`),
    Effect.map((rows) => rows.length > 0)
  )

const EventRow = Schema.Struct({ ...JobEvent.fields, created_at: Schema.DateFromSelf })
const LatestSeq = Schema.Struct({ kind: Schema.String, job_id: Schema.String, seq: Schema.Int })
const FollowedJob = Schema.Struct({ kind: Schema.String, id: Schema.String })

/** The events of durable jobs of every kind, each job's keyed by its kind and id. */
export class JobEventsRepo extends Effect.Service<JobEventsRepo>()("sluice/JobEventsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("job events")

    const eventsAfter = SqlSchema.findAll({
      Request: Schema.Struct({ kind: Schema.String, jobId: Schema.String, afterSeq: Schema.Number, limit: Schema.Number }),
      Result: EventRow,
      execute: ({ kind, jobId, afterSeq, limit }) => sql`select seq, type, data, created_at from job_events
        where kind = ${kind} and job_id = ${jobId} and seq > ${afterSeq} order by seq limit ${limit}`
    })
    /** A job's events after `afterSeq`, in order. */
    const events = Effect.fn("JobEventsRepo.events")(
      (kind: string, orgId: OrgId, jobId: string, afterSeq: number, limit: number) => eventsAfter({ kind, jobId, afterSeq, limit }).pipe(withOrg(orgId)),
      failures
    )

    const latestSeqsOf = SqlSchema.findAll({
      Request: Schema.Array(FollowedJob),
      Result: LatestSeq,
      execute: (jobs) => sql`select kind, job_id, max(seq)::int as seq from job_events
        where kind in ${sql.in([...new Set(jobs.map((job) => job.kind))])} and job_id in ${sql.in(jobs.map((job) => job.id))}
        group by kind, job_id`
    })
    /**
     * The latest event seq of each of these jobs, whatever their org: system work for the process's
     * event feed, which only wakes the (already authorized) followers of those jobs.
     */
    const latestSeqs = Effect.fn("JobEventsRepo.latestSeqs")((jobs: ReadonlyArray<typeof FollowedJob.Type>) => latestSeqsOf(jobs), failures)

    return { events, latestSeqs } as const
  })
}) {}
