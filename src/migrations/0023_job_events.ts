import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- What a durable job did, in order, for every kind of job (the agent run's events until now):
-- each written once by the step it belongs to, so a replayed step adds nothing.
create table job_events (
  kind text not null,
  job_id text not null,
  org_id text not null,
  seq integer not null,
  step text not null,
  type text not null,
  data jsonb not null,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  primary key (kind, job_id, seq),
  unique (kind, job_id, step)
);
${isolateByOrg("job_events", { privileges: "select, insert" })}

insert into job_events (kind, job_id, org_id, seq, step, type, data, created_at)
  select 'agent_run', run_id, org_id, seq, step, type, data, created_at from agent_run_events;
drop table agent_run_events;

-- A run's events go with it, as they did by their foreign key to the run.
create function agent_run_events_gone() returns trigger
language plpgsql security definer set search_path from current as $$
begin
  delete from job_events where kind = 'agent_run' and job_id = old.id;
  return old;
end
$$;
create trigger agent_run_events_gone after delete on agent_runs for each row execute function agent_run_events_gone();
`)
)
