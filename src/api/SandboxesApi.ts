import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CapacityReached, Conflict, Gone, InvalidRequest, NotAvailableHere, NotFound, Unavailable } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { CreateSandbox, ExecuteCode, ExecuteResult, Sandbox, SandboxStatus } from "../domain/Sandbox"
import { ResourceId } from "../domain/Text"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: ResourceId })

export class SandboxesApi extends HttpApiGroup.make("sandboxes")
  .add(
    HttpApiEndpoint.get("list", "/sandboxes")
      .setUrlParams(PageParams)
      .addSuccess(Page(Sandbox))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List sandboxes", "The caller's own sandboxes, newest first (a sandbox is its creating credential's — that key, or that user's sign-in — so no one else sees or uses it, not even another key of the same user)."))
  )
  .add(
    HttpApiEndpoint.get("get", "/sandboxes/:id")
      .setPath(ById)
      .addSuccess(Sandbox)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a sandbox", "Its status (starting, running, idle, snapshotted, stopped, error), limits, use, and the globals its snapshots could not keep."))
  )
  .add(
    HttpApiEndpoint.post("create", "/sandboxes")
      .setPayload(CreateSandbox)
      .addSuccess(Sandbox, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(CapacityReached)
      .addError(NotAvailableHere)
      .addError(Unavailable)
      .annotate(RequiredScope, "execute")
      .annotateContext(
        docs(
          "Create a sandbox",
          "Starts an isolated Python process for your code (bubblewrap: no network, a private work directory, limits on memory, CPU, processes and output). Its code queries data with `import sluice; sluice.query(sql)` as you, read-only, masked, audited, bound to `connection_name` when given, at most `row_limit` rows a query and `budget_usd` in all. `timeout_seconds` (default 300) bounds each execute. At most 10 run at once per gateway (429 beyond). Not available in cloud mode (501)."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("execute", "/sandboxes/:id/execute")
      .setPath(ById)
      .setPayload(ExecuteCode)
      .addSuccess(ExecuteResult)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Gone)
      .addError(CapacityReached)
      .addError(NotAvailableHere)
      .addError(Unavailable)
      .annotate(RequiredScope, "execute")
      .annotateContext(
        docs(
          "Run code in a sandbox",
          "Runs `code` with the globals earlier calls left, as a REPL does, and answers with what it printed (1 MiB of each stream at most; `truncated` says when more was cut) and its error. A snapshotted sandbox resumes first, transparently; one whose snapshot expired answers 410. Code that runs past its timeout is stopped."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("remove", "/sandboxes/:id")
      .setPath(ById)
      .addSuccess(Schema.Struct({ id: Schema.String, deleted: Schema.Boolean, status: SandboxStatus }))
      .addError(NotFound)
      .annotate(RequiredScope, "execute")
      .annotateContext(docs("Delete a sandbox", "Ends its process and deletes its snapshot and files; its record stays, stopped."))
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Sandboxes: isolated Python next to the data, whose code reaches data only through the gate.") {}
