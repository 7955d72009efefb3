import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CapacityReached, Conflict, InvalidRequest, NotAvailableHere, NotFound, Unavailable } from "../domain/Errors"
import { NotebookSession, StartNotebookSession } from "../domain/NotebookSession"
import { ResourceId } from "../domain/Text"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: ResourceId })

export class NotebookSessionsApi extends HttpApiGroup.make("notebookSessions")
  .add(
    HttpApiEndpoint.post("start", "/notebook-sessions")
      .setPayload(StartNotebookSession)
      .addSuccess(NotebookSession, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(CapacityReached)
      .addError(NotAvailableHere)
      .addError(Unavailable)
      .annotate(RequiredScope, "execute")
      .annotateContext(
        docs(
          "Start a notebook session",
          "Your notebook session: a Jupyter server (classic notebook UI, Python kernels) under a sandbox's isolation, in your own work directory (kept across sessions), its kernels querying data through the gate with `import sluice`. One per credential (an API key, or a user's sign-in; a session and its files are that credential's alone): an active one is returned (`reused: true`) rather than a second started. `url` is the notebook UI on the notebook origin (SP_NOTEBOOK_PORT, apart from the API's: a notebook's pages must not hold its authority), reached with the same key; a browser opens `open_url` instead, a one-time link (valid a minute) that signs it in to this session alone. Not available in cloud mode (501), nor with SP_NOTEBOOK_PORT=0 (503)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/notebook-sessions/:id")
      .setPath(ById)
      .addSuccess(NotebookSession)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a notebook session", "Its status, URL and idle deadline; an ended session says why (`error`), an idle timeout included."))
  )
  .add(
    HttpApiEndpoint.del("remove", "/notebook-sessions/:id")
      .setPath(ById)
      .addSuccess(Schema.Struct({ id: Schema.String, deleted: Schema.Boolean }))
      .addError(NotFound)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("End a notebook session", "Stops its server and kernels; your files stay in your work directory."))
  )
  .add(
    HttpApiEndpoint.post("ping", "/notebook-sessions/:id/ping")
      .setPath(ById)
      .addSuccess(NotebookSession)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Keep a notebook session alive", "Starts its idle timeout (SP_NOTEBOOK_IDLE_TIMEOUT, 2 h) again; any request through its proxy does too."))
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Notebook sessions: Jupyter next to the data, reached through the gateway's proxy.") {}
