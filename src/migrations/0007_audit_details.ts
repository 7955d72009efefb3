import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

// What a governed query adds to its audit row: tables, completeness, cache, masking, budget, reason.
export default Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`alter table gateway_audit_logs add column details jsonb`))
