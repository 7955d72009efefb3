import { Effect, Either } from "effect"
import type { ConnectorError, ConnectorPool } from "../../layers/connectors/Connector"
import { openTarget } from "../../layers/connectors/ConnectorPools"
import type { ConnectionInput } from "../../src/domain/Connection"

/** Opens the connector as the gateway does (openTarget, with the connection's password to scrub) and runs `use`. */
export const withPool = <A, E = ConnectorError>(connection: ConnectionInput, use: (pool: ConnectorPool) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(
        openTarget({ orgId: "o", connectionId: "c", version: 1, connection, secrets: "password" in connection && connection.password ? [connection.password] : [] }),
        use
      )
    )
  )

/** The error of an outcome that must have failed. */
export const failure = <A>(either: Either.Either<A, ConnectorError>) => {
  if (Either.isRight(either)) throw new Error(`expected a failure, got ${JSON.stringify(either.right)}`)
  return either.left
}
