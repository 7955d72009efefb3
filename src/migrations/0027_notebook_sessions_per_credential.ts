import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- A notebook session is its starting credential's: one active per key, or per user's session or local access.
drop index notebook_sessions_active_idx;
create unique index notebook_sessions_active_idx on notebook_sessions (org_id, user_id, principal_kind, coalesce(key_id, '')) where status in ('starting', 'running');
`)
)
