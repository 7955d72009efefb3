import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
-- Where a branch lives when it is not on the connection's own server: a hosted branching service's
-- branch (its id there, and the host and port of its compute). Such a branch is reached with the
-- connection's own role, which the service copies with the branch: it has no role or secret of its own.
alter table db_branches add column host text;
alter table db_branches add column port integer;
alter table db_branches add column provider_ref text;
alter table db_branches alter column owner_secret drop not null;
`)
)
