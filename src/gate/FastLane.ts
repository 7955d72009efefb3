import { randomUUID } from "node:crypto"
import type { AppConfig } from "../../layers/AppConfig"
import { HEALTHY } from "../api/PublicApi"
import type { FrontLane } from "../../layers/DrainingServer"
import { announcesBody } from "./BodyHeaders"
import { allowedHostGuard, envelopeHeaderList } from "./Envelope"
import type { FastRoute } from "./FastAnswers"

const HEALTHY_BODY = Buffer.from(JSON.stringify(HEALTHY))
const HEALTHY_HEAD = ["content-type", "application/json", "content-length", String(HEALTHY_BODY.length)]
const HEALTH = /^\/health\/?(?:\?|$)/

/**
 * The plain `node:http` lane in front of the Effect app (issue 28): a route it serves is answered
 * as the Effect app answers it, envelope and audit row included, where it can decide the request
 * from memory. Anything else, a refused Host included, is left to the Effect app, which does the
 * full work; a route that has read a body leaves its request to the app with the body given back.
 */
export const makeFastLane = (config: AppConfig, routes: ReadonlyArray<FastRoute> = []): FrontLane => {
  const hostAllowed = allowedHostGuard(config)
  return (request, response, handOff) => {
    const url = request.url ?? ""
    if (!hostAllowed(request.headers as Readonly<Record<string, string | undefined>>)) return false
    if (request.method === "GET" && HEALTH.test(url) && !announcesBody(request.headers)) {
      response.writeHead(200, [...HEALTHY_HEAD, ...envelopeHeaderList(randomUUID(), url)])
      response.end(HEALTHY_BODY)
      return true
    }
    for (const route of routes) if (route(request, response, handOff)) return true
    return false
  }
}
