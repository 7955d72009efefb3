import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { Audit } from "../services/Audit"

export const AuditHttp = HttpApiBuilder.group(SluiceApi, "audit", (handlers) =>
  Effect.gen(function* () {
    const audit = yield* Audit
    const config = yield* AppConfig
    return handlers
      .handle("list", ({ urlParams: { limit, cursor, ...filter } }) =>
        Effect.flatMap(CurrentPrincipal, (p) => audit.list(p, filter, { limit, cursor }))
      )
      .handle("stats", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => audit.stats(p, urlParams.hours ?? 24)))
      .handleRaw("export", ({ urlParams: { format = "json", ...filter } }) =>
        Effect.map(CurrentPrincipal, (p) =>
          HttpServerResponse.stream(audit.exportRows(p, filter, format, config.maxExportRows), {
            contentType: format === "csv" ? "text/csv; charset=utf-8" : "application/json",
            headers: { "content-disposition": `attachment; filename="sluice-audit.${format}"` }
          })
        )
      )
  })
)
