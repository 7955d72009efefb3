import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Capabilities, CloneConnection, Connection, ConnectionInput, ConnectionName, ConnectionTestResult, DbType } from "../domain/Connection"
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { docs, RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: ConnectionName })

export const DiagnoseResult = Schema.Struct({
  ok: Schema.Boolean,
  steps: Schema.Array(
    Schema.Struct({
      step: Schema.String,
      status: Schema.Literal("ok", "failed", "skipped"),
      duration_ms: Schema.Number,
      detail: Schema.String
    })
  )
})

export const PoolStats = Schema.Struct({
  pools: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      db_type: DbType,
      version: Schema.Int,
      opened_at: Schema.Date,
      last_used_at: Schema.Date,
      total: Schema.Int,
      idle: Schema.Int,
      waiting: Schema.Int
    })
  )
})

const READ_ONLY = "Connections configured by the environment (SP_CONNECTION_…) are read-only here (403)."

export class ConnectionsApi extends HttpApiGroup.make("connections")
  .add(
    HttpApiEndpoint.get("list", "/connections")
      .setUrlParams(PageParams)
      .addSuccess(Page(Connection))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "List connections",
          "The organization's connections by name, without their secrets. Paginated: pass `next_cursor` back as `cursor` for the next page (`limit` 1–500, default 100)."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("create", "/connections")
      .setPayload(ConnectionInput)
      .addSuccess(Connection, { status: 201 })
      .addError(InvalidRequest)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Create a connection",
          "Stores a database connection; its secrets are encrypted at rest and never returned. A name already used in the organization is a 409."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("testCredentials", "/connections/test-credentials")
      .setPayload(ConnectionInput)
      .addSuccess(ConnectionTestResult)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
      .annotateContext(
        docs(
          "Test unsaved connection settings",
          "Connects once with the given settings, stores nothing and closes. A failed connection is a 200 with `ok: false`, the failing step and its error."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/connections/:name")
      .setPath(ByName)
      .addSuccess(Connection)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a connection", "One connection's settings, without its secrets. 404 when the organization has no connection of that name."))
  )
  .add(
    HttpApiEndpoint.put("update", "/connections/:name")
      .setPath(ByName)
      .setPayload(ConnectionInput)
      .addSuccess(Connection)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Forbidden)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Replace a connection",
          `Replaces the connection's settings; secrets left out keep their stored values while the database type stays the same, and open pools are closed. 404 for an unknown name, 409 when a rename takes a name in use. ${READ_ONLY}`
        )
      )
  )
  .add(
    HttpApiEndpoint.del("remove", "/connections/:name")
      .setPath(ByName)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Delete a connection", `Deletes the connection and closes its pools. 404 for an unknown name; 409 while it has database branches (delete them first). ${READ_ONLY}`))
  )
  .add(
    HttpApiEndpoint.post("clone", "/connections/:name/clone")
      .setPath(ByName)
      .setPayload(CloneConnection)
      .addSuccess(Connection, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Clone a connection",
          "Copies the connection, secrets and PII rules included, under a new name. 404 when the source does not exist, 409 when the new name is taken."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("test", "/connections/:name/test")
      .setPath(ByName)
      .addSuccess(ConnectionTestResult)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "read")
      .annotate(RateClass, "expensive")
      .annotateContext(
        docs(
          "Test a connection",
          "Pings the database through the connection's pool, as queries would, and records the result in its health history. A failed ping is a 200 with `ok: false`; 404 for an unknown name, 409 when the stored credentials cannot be decrypted."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("diagnose", "/connections/:name/diagnose")
      .setPath(ByName)
      .addSuccess(DiagnoseResult)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "read")
      .annotate(RateClass, "expensive")
      .annotateContext(
        docs(
          "Diagnose a connection",
          "Runs each step of connecting on its own (DNS, TCP, TLS, login, privileges, or the file for local types), stopping at the first failure, and reports each step's outcome and timing. 404 for an unknown name."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("capabilitiesAll", "/connectors/capabilities")
      .addSuccess(Schema.Struct({ connectors: Schema.Array(Capabilities) }))
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs("List connector capabilities", "What this build's connector for each database type can do: whether it is available, its driver and transport, how it keeps queries read-only, and more.")
      )
  )
  .add(
    HttpApiEndpoint.get("capabilities", "/connections/:name/capabilities")
      .setPath(ByName)
      .addSuccess(Capabilities)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a connection's capabilities", "The capabilities of the connector a connection uses. 404 for an unknown name."))
  )
  .add(
    HttpApiEndpoint.get("poolStats", "/pool/stats")
      .addSuccess(PoolStats)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List connection pools", "The organization's open connection pools on this replica: when each opened and was last used, and how many connections are busy, idle and waited for."))
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Database connections: create, read, change, delete, clone and test them. Secrets are write-only.") {}
