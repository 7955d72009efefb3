import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg, TENANT_ROLE } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- What an organization knows about its data, written by people and proposed by agents.
create table knowledge_entries (
  id text primary key,
  org_id text not null,
  scope text not null check (scope in ('org', 'project', 'connection')),
  -- the project or connection it is about; null for the organization's own
  scope_ref text,
  category text not null check (category in ('context', 'decisions', 'rules', 'troubleshooting')),
  title text not null,
  body text not null,
  status text not null check (status in ('pending', 'active', 'archived')),
  proposed_by_agent boolean not null default false,
  bytes integer not null,
  view_count integer not null default 0,
  version integer not null default 1,
  created_by text not null,
  updated_by text not null,
  approved_by text,
  approved_at timestamptz,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now()),
  search tsvector generated always as (
    setweight(to_tsvector('english', replace(title, '-', ' ')), 'A') || setweight(to_tsvector('english', body), 'B')
  ) stored,
  check ((scope = 'org') = (scope_ref is null))
);
create unique index knowledge_entries_place_idx on knowledge_entries (org_id, scope, coalesce(scope_ref, ''), category, title);
create index knowledge_entries_org_idx on knowledge_entries (org_id, updated_at desc, id desc);
create index knowledge_entries_search_idx on knowledge_entries using gin (search);
${isolateByOrg("knowledge_entries", { privileges: "select, insert, update" })}

-- A counter per org that every change of its active entries bumps, in the change's own transaction:
-- what tells an in-memory search index of them (on any replica) that it is out of date.
-- Proposals (pending) are not indexed, so writing them rebuilds nothing.
create table knowledge_generations (
  org_id text primary key,
  generation bigint not null
);
${isolateByOrg("knowledge_generations", { privileges: "select, insert, update" })}
create function knowledge_entries_changed() returns trigger language plpgsql as $$
begin
  if new.status = 'active' or (tg_op = 'UPDATE' and old.status = 'active') then
    insert into knowledge_generations as g (org_id, generation) values (new.org_id, 1)
      on conflict (org_id) do update set generation = g.generation + 1;
  end if;
  return null;
end
$$;
create trigger knowledge_entries_changed after insert or update on knowledge_entries
  for each row execute function knowledge_entries_changed();

-- Earlier versions of an entry, each as it was before an edit replaced it; the oldest pruned past a number kept.
create table knowledge_edits (
  org_id text not null,
  entry_id text not null references knowledge_entries (id) on delete cascade,
  version integer not null,
  scope text not null,
  scope_ref text,
  category text not null,
  title text not null,
  body text not null,
  status text not null,
  edited_by text not null,
  edited_at timestamptz not null,
  replaced_by text not null,
  replaced_at timestamptz not null default date_trunc('milliseconds', now()),
  primary key (entry_id, version)
);
${isolateByOrg("knowledge_edits", { privileges: "select, insert, delete" })}

-- Every entry delivered for a search or a task, kept 90 days.
create table knowledge_retrievals (
  id bigserial primary key,
  org_id text not null,
  entry_id text not null references knowledge_entries (id) on delete cascade,
  source text not null,
  query text,
  rank integer not null,
  score double precision not null,
  principal text not null,
  key_id text,
  retrieved_at timestamptz not null default date_trunc('milliseconds', now())
);
create index knowledge_retrievals_org_idx on knowledge_retrievals (org_id, retrieved_at desc);
create index knowledge_retrievals_entry_idx on knowledge_retrievals (entry_id, retrieved_at desc);
create index knowledge_retrievals_age_idx on knowledge_retrievals (retrieved_at);
${isolateByOrg("knowledge_retrievals", { privileges: "select, insert" })}
grant usage on sequence knowledge_retrievals_id_seq to ${TENANT_ROLE};
`)
)
