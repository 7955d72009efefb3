import type { HttpServerRequest } from "@effect/platform"

/** The origin the caller reached, for URLs it can use (the pipeline has already checked the Host against SP_ALLOWED_HOSTS). */
export const originReached = (request: HttpServerRequest.HttpServerRequest) => {
  const scheme = request.headers["x-forwarded-proto"] === "https" ? "https" : "http"
  return `${scheme}://${request.headers["host"] ?? "localhost:3300"}`
}

/** The host name alone (no port) the caller reached: where its tools reach the gateway's other ports. */
export const hostReached = (request: HttpServerRequest.HttpServerRequest) => new URL(originReached(request)).hostname
