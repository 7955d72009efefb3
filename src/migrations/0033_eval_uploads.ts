import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isolateByOrg } from "./TenantIsolation"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Eval-set archives uploaded in parts straight to the object store (presigned part URLs) or through
-- the gateway (the filesystem store). An open upload expires 6 hours after it began; a completed
-- archive is deleted 7 days after it was completed. At most 3 open per user.
create table eval_uploads (
  id text primary key,
  org_id text not null,
  user_id text not null,
  file_name text not null,
  object_key text not null,
  store_upload_id text not null,
  size bigint not null check (size > 0),
  part_size bigint not null check (part_size > 0),
  status text not null check (status in ('open', 'complete', 'aborted', 'expired')),
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  expires_at timestamptz not null,
  completed_at timestamptz
);
create index eval_uploads_open_idx on eval_uploads (org_id, user_id) where status = 'open';
create index eval_uploads_expiry_idx on eval_uploads (expires_at) where status in ('open', 'complete');
${isolateByOrg("eval_uploads", { privileges: "select, insert, update" })}
`)
)
