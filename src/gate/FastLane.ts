import { randomUUID } from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"
import type { AppConfig } from "../../layers/AppConfig"
import { HEALTHY } from "../api/PublicApi"
import type { FrontLane } from "../../layers/DrainingServer"
import { allowedHostGuard, envelopeHeaderList } from "./Envelope"

const HEALTHY_BODY = Buffer.from(JSON.stringify(HEALTHY))
const HEALTHY_HEAD = ["content-type", "application/json", "content-length", String(HEALTHY_BODY.length)]
const HEALTH = /^\/health\/?(?:\?|$)/

const hasBody = (headers: IncomingHttpHeaders) => (headers["content-length"] !== undefined && headers["content-length"] !== "0") || headers["transfer-encoding"] !== undefined

/**
 * The plain `node:http` lane in front of the Effect app (issue 28): a route it serves is answered
 * as the Effect app answers it, envelope included, where doing so needs nothing but memory and
 * leaves nothing to record (no audit row, limit or store). Anything else, a refusal included, is
 * left to the Effect app, which does the full work.
 */
export const makeFastLane = (config: AppConfig): FrontLane => {
  const hostAllowed = allowedHostGuard(config)
  return (request, response) => {
    const url = request.url ?? ""
    if (request.method !== "GET" || !HEALTH.test(url) || hasBody(request.headers) || !hostAllowed(request.headers as Readonly<Record<string, string | undefined>>)) return false
    response.writeHead(200, [...HEALTHY_HEAD, ...envelopeHeaderList(randomUUID(), url)])
    response.end(HEALTHY_BODY)
    return true
  }
}
