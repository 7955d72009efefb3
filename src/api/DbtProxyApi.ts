import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { MintRunToken, RunToken } from "../domain/DbtRunToken"
import { Conflict, Forbidden, InvalidRequest, NotAvailableHere, NotFound, Unavailable } from "../domain/Errors"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

export class DbtProxyApi extends HttpApiGroup.make("dbtProxy")
  .add(
    HttpApiEndpoint.post("mintRunToken", "/dbt-proxy/run-tokens")
      .setPayload(MintRunToken)
      .addSuccess(RunToken, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Unavailable)
      .addError(NotAvailableHere)
      .addError(Forbidden)
      .annotate(RequiredScope, "dbt_proxy")
      .annotateContext(
        docs(
          "Mint a dbt run token",
          "A password for the dbt proxy (SP_DBT_PROXY_PORT): it opens a session on `branch` of `project` on `connection_name`, as the branch's own role, for `ttl_seconds` (60–86400, default 3600). Statements through it are classified first: dbt's DDL and DML in the branch run; COPY to or from files or programs, GRANT/REVOKE, role changes, other databases, dblink and functions that reach files or sessions are refused. Each statement is an audit row naming `run_id`. The credential that mints it must keep the dbt_proxy scope: the proxy checks again at every connection and every 30 s."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "The dbt proxy: a PostgreSQL-protocol endpoint dbt and psql use without warehouse credentials.") {}
