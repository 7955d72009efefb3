import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { NotebookSessions } from "../services/NotebookSessions"

export const NotebookSessionsHttp = HttpApiBuilder.group(SluiceApi, "notebookSessions", (handlers) =>
  Effect.gen(function* () {
    const sessions = yield* NotebookSessions
    return handlers
      .handle("start", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => sessions.start(p, payload)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => sessions.get(p, path.id)))
      .handle("remove", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => sessions.remove(p, path.id)))
      .handle("ping", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => sessions.ping(p, path.id)))
  })
)
