import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { TENANT_ROLE } from "./TenantIsolation"

// A request's audit row is written in the transaction of the change it makes, as the tenant role; row-level security keeps it to the tenant's own org.
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
grant insert on gateway_audit_logs to ${TENANT_ROLE};
grant usage on sequence gateway_audit_logs_id_seq to ${TENANT_ROLE};
`)
)
