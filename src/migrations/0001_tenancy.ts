import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg, TENANT_ROLE } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
do $$ begin
  create role ${TENANT_ROLE} nologin;
exception when duplicate_object or unique_violation then null;
end $$;
do $$ begin
  execute format('grant ${TENANT_ROLE} to %I', current_user);
exception when others then null;
end $$;

create table organizations (
  id text primary key,
  name text not null,
  plan text not null default 'team',
  created_at timestamptz not null default now()
);
create table users (
  id text primary key,
  email text,
  display_name text,
  created_at timestamptz not null default now()
);
create table memberships (
  org_id text not null references organizations (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  role text not null check (role in ('member', 'admin')),
  created_at timestamptz not null default now(),
  primary key (org_id, user_id)
);
${isolateByOrg("organizations", { column: "id", privileges: "select" })}
${isolateByOrg("memberships", { privileges: "select" })}
`)
)
