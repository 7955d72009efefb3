import { HttpApiBuilder } from "@effect/platform"
import { Effect, Either } from "effect"
import { SluiceApi } from "../api/Api"
import { splitSecrets } from "../domain/ConnectionSecrets"
import { buildConnectionUrl, parseConnectionUrl, URL_FORMS, validateConnectionUrl } from "../domain/ConnectionUrl"
import { InvalidRequest } from "../domain/Errors"

export const ConnectionUrlsHttp = HttpApiBuilder.group(SluiceApi, "connectionUrls", (handlers) =>
  handlers
    .handle("parse", ({ payload }) =>
      Either.match(parseConnectionUrl(payload.url), {
        onLeft: (message) => Effect.fail(new InvalidRequest({ message: `url: ${message}` })),
        onRight: (fields) => {
          const { settings, secrets } = splitSecrets(fields)
          return Effect.succeed({
            db_type: fields.db_type,
            fields: settings,
            secrets_present: Object.keys(secrets),
            url_form: URL_FORMS[fields.db_type]
          })
        }
      })
    )
    .handle("validate", ({ payload }) => Effect.succeed(validateConnectionUrl(payload.url)))
    .handle("build", ({ payload }) => {
      const { name: _name, ...fields } = payload
      return Effect.succeed(buildConnectionUrl(fields))
    })
)
