import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { Capabilities, CloneConnection, Connection, ConnectionInput, ConnectionName, ConnectionTestResult, DbType } from "../domain/Connection"
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { RateClass, RequiredScope } from "./Annotations"
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

export class ConnectionsApi extends HttpApiGroup.make("connections")
  .add(
    HttpApiEndpoint.get("list", "/connections")
      .setUrlParams(PageParams)
      .addSuccess(Page(Connection))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.post("create", "/connections")
      .setPayload(ConnectionInput)
      .addSuccess(Connection, { status: 201 })
      .addError(InvalidRequest)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
  )
  .add(
    HttpApiEndpoint.post("testCredentials", "/connections/test-credentials")
      .setPayload(ConnectionInput)
      .addSuccess(ConnectionTestResult)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
  )
  .add(HttpApiEndpoint.get("get", "/connections/:name").setPath(ByName).addSuccess(Connection).addError(NotFound).annotate(RequiredScope, "read"))
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
  )
  .add(
    HttpApiEndpoint.del("remove", "/connections/:name")
      .setPath(ByName)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .addError(Forbidden)
      .annotate(RequiredScope, "write")
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
  )
  .add(
    HttpApiEndpoint.post("test", "/connections/:name/test")
      .setPath(ByName)
      .addSuccess(ConnectionTestResult)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "read")
      .annotate(RateClass, "expensive")
  )
  .add(
    HttpApiEndpoint.post("diagnose", "/connections/:name/diagnose")
      .setPath(ByName)
      .addSuccess(DiagnoseResult)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "read")
      .annotate(RateClass, "expensive")
  )
  .add(
    HttpApiEndpoint.get("capabilitiesAll", "/connectors/capabilities")
      .addSuccess(Schema.Struct({ connectors: Schema.Array(Capabilities) }))
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.get("capabilities", "/connections/:name/capabilities")
      .setPath(ByName)
      .addSuccess(Capabilities)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
  )
  .add(HttpApiEndpoint.get("poolStats", "/pool/stats").addSuccess(PoolStats).annotate(RequiredScope, "read"))
  .middleware(Authentication)
  .prefix("/api") {}
