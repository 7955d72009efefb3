import { Context, Effect } from "effect"
import type { Principal } from "../domain/Principal"
import type { ClientAddress } from "./ClientAddress"

/** What one request learns on its way through, read back when its audit row is written. */
export interface RequestInfo {
  readonly requestId: string
  readonly client: ClientAddress
  eventType: string
  principal: Principal | null
  connection: string | null
  sql: string | null
  rows: number | null
  bodyTooLarge: boolean
}

export class RequestState extends Context.Tag("sluice/RequestState")<RequestState, RequestInfo>() {}

/** Names the connection in the request's audit row (handlers see RequestState only as an option). */
export const onConnection = (name: string) =>
  Effect.flatMap(Effect.serviceOption(RequestState), (info) =>
    Effect.sync(() => {
      if (info._tag === "Some") info.value.connection = name
    })
  )
