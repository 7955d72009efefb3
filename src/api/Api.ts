import { HttpApi, OpenApi } from "@effect/platform"
import { PayloadTooLarge } from "../domain/Errors"
import { AuditApi } from "./AuditApi"
import { KeysApi } from "./KeysApi"
import { PublicApi } from "./PublicApi"
import { SystemApi } from "./SystemApi"

export class SluiceApi extends HttpApi.make("sluice")
  .add(PublicApi)
  .add(KeysApi)
  .add(AuditApi)
  .add(SystemApi)
  .addError(PayloadTooLarge)
  .annotateContext(
    OpenApi.annotations({
      title: "Sluice",
      version: "0.1.0",
      description: "Governed data gateway. Send an API key as `x-api-key: sp_…` or `Authorization: Bearer sp_…`."
    })
  ) {}
