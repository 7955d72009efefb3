import { Option } from "effect"
import type { AppConfig } from "../../layers/AppConfig"
import { sessionOfHost, sessionOrigin } from "../domain/NotebookOrigin"

/** What every response of the gateway carries, whichever lane answers it. */
export const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "content-security-policy": "frame-ancestors 'none'",
  "referrer-policy": "no-referrer"
}

const SECURITY_HEADER_LIST: ReadonlyArray<string> = Object.entries(SECURITY_HEADERS).flat()
const NO_STORE = ["cache-control", "no-store"]

/**
 * A response's envelope headers as a flat name, value list (the form `writeHead` writes cheapest):
 * the security headers, its request id, and no caching (the docs page aside).
 */
export const envelopeHeaderList = (requestId: string, url: string): Array<string> =>
  url.startsWith("/docs") ? [...SECURITY_HEADER_LIST, "x-request-id", requestId] : [...SECURITY_HEADER_LIST, "x-request-id", requestId, ...NO_STORE]

/** The same headers as a record. */
export const envelopeHeaders = (requestId: string, url: string): Record<string, string> => {
  const list = envelopeHeaderList(requestId, url)
  const headers: Record<string, string> = {}
  for (let i = 0; i < list.length; i += 2) headers[list[i]!] = list[i + 1]!
  return headers
}

const HOST_VERDICTS = 256

const originOf = (value: string) => Option.getOrNull(Option.liftThrowable(() => new URL(value).origin)())

/** Whether a request's Host and Origin are the gateway's own: the API's or the web app's (self-hosted, or where SP_ALLOWED_HOSTS names them). */
export const allowedHostGuard = (config: AppConfig) => {
  const names = new Set(["localhost", "127.0.0.1", "[::1]", ...config.allowedHosts.map((h) => h.toLowerCase())])
  if (config.host !== "0.0.0.0" && config.host !== "::") names.add(config.host.toLowerCase())
  // An Origin is a scheme, host and port: a page on another local port is another site. An allowed
  // host may also sit behind a proxy on its default ports.
  const ports = [config.port, ...(config.webPort === 0 ? [] : [config.webPort])]
  const origins = new Set(
    [
      ...[...names].flatMap((name) => ports.map((port) => `http://${name}:${port}`)),
      ...config.allowedHosts.flatMap((host) => [`https://${host}`, `http://${host}`])
    ].flatMap((origin) => Option.toArray(Option.fromNullable(originOf(origin))))
  )
  const enforce = config.selfHosted || config.allowedHosts.length > 0
  const hostname = (value: string) => {
    const url = Option.getOrNull(Option.liftThrowable(() => new URL(value.includes("://") ? value : `http://${value}`))())
    return url?.hostname.toLowerCase() ?? null
  }
  const allowed = (host: string | undefined, origin: string | undefined) =>
    host !== undefined && names.has(hostname(host) ?? "") && (origin === undefined || origins.has(originOf(origin) ?? ""))
  // Clients send the same few Host and Origin values: each is parsed once (a URL parse per request is measurable on the fast lane); the cache starts over when full.
  const verdicts = new Map<string, boolean>()
  return (headers: Readonly<Record<string, string | undefined>>) => {
    if (!enforce) return true
    const host = headers["host"]
    const origin = headers["origin"]
    const key = `${host ?? ""}\n${origin ?? "\n"}`
    let verdict = verdicts.get(key)
    if (verdict === undefined) {
      verdict = allowed(host, origin)
      if (verdicts.size >= HOST_VERDICTS) verdicts.clear()
      verdicts.set(key, verdict)
    }
    return verdict
  }
}

/**
 * Whether a request on the notebook port is for a session's own origin: its Host one of the
 * template's (SP_NOTEBOOK_ORIGIN), and its Origin, when it has one, that same origin (a page of
 * another session, of the API or of any other site is refused).
 */
export const notebookHostGuard = (config: AppConfig) => (headers: Readonly<Record<string, string | undefined>>) => {
  const id = sessionOfHost(config.notebookOrigins, headers["host"])
  const origin = headers["origin"]
  return id !== null && (origin === undefined || origin.toLowerCase() === sessionOrigin(config.notebookOrigins, id))
}
