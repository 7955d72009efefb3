import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { ConnectionTransfer } from "../services/ConnectionTransfer"
import { RequestState } from "../gate/RequestState"

/** An export with secrets gets its own audit event type, so it stands out in the log. */
const markSecretExport = Effect.flatMap(Effect.serviceOption(RequestState), (info) =>
  Effect.sync(() => {
    if (info._tag === "Some") info.value.eventType = "connections_export_secrets"
  })
)

export const ConnectionTransferHttp = HttpApiBuilder.group(SluiceApi, "connectionTransfer", (handlers) =>
  Effect.gen(function* () {
    const transfer = yield* ConnectionTransfer
    return handlers
      .handle("export", ({ payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          transfer.exportAll(p, payload).pipe(Effect.tap((result) => (result.include_secrets ? markSecretExport : Effect.void)))
        )
      )
      .handle("import", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => transfer.importAll(p, payload)))
  })
)
