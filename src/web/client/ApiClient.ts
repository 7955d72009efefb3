import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientError, HttpClientRequest } from "@effect/platform"
import { Data, Effect, ParseResult } from "effect"
import { SluiceApi } from "../../api/Api"
import { issueMessages } from "../../domain/ParseIssues"

/** What the gateway said when it refused: its `code` and `message`, and the HTTP status. */
export class ApiFailure extends Data.TaggedError("ApiFailure")<{ readonly status: number; readonly code: string; readonly message: string }> {}

const readFailure = (status: number, body: unknown) => {
  const record = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {}
  return new ApiFailure({
    status,
    code: typeof record["code"] === "string" ? record["code"] : "error",
    message: typeof record["message"] === "string" ? record["message"] : `The request failed (${status})`
  })
}

/** Every error body is `{code, message}` (carried here in a ResponseError's description); anything else reads as one too. */
const failureOf = (error: unknown): ApiFailure => {
  if (error instanceof ApiFailure) return error
  if (HttpClientError.isHttpClientError(error) && error._tag === "ResponseError" && error.reason === "StatusCode") {
    return readFailure(error.response.status, JSON.parse(error.description ?? "null"))
  }
  if (ParseResult.isParseError(error)) return new ApiFailure({ status: 0, code: "invalid_request", message: issueMessages(error).join("; ") })
  return new ApiFailure({ status: 0, code: "network_error", message: "The gateway could not be reached" })
}

/** The typed client derived from the server's HttpApi contract, sending the session's key or token on every request. */
export const makeClient = (key: string | null) =>
  HttpApiClient.make(SluiceApi, {
    baseUrl: window.location.origin,
    transformClient: (client) =>
      client.pipe(
        HttpClient.mapRequest((request) => (key === null ? request : HttpClientRequest.bearerToken(request, key))),
        // The gateway's error bodies are {code, message}; the response error carries the body on to failureOf.
        HttpClient.transformResponse((response) =>
          Effect.flatMap(response, (res) =>
            res.status < 400
              ? Effect.succeed(res)
              : Effect.flatMap(Effect.orElseSucceed(res.json, () => null), (body) =>
                  Effect.fail(new HttpClientError.ResponseError({ request: res.request, response: res, reason: "StatusCode", description: JSON.stringify(body) }))
                )
          )
        )
      )
  })

export type Client = Effect.Effect.Success<ReturnType<typeof makeClient>>

/** Runs one call on a client as a promise that rejects with an ApiFailure. */
export const run = <A>(key: string | null, call: (client: Client) => Effect.Effect<A, unknown>): Promise<A> =>
  Effect.runPromise(
    makeClient(key).pipe(
      Effect.flatMap(call),
      Effect.mapError(failureOf),
      Effect.catchAllDefect((defect) => Effect.fail(failureOf(defect))),
      Effect.provide(FetchHttpClient.layer),
      Effect.either
    )
  ).then((result) => (result._tag === "Right" ? result.right : Promise.reject(result.left)))
