import * as net from "node:net"
import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ConnectorError } from "../../../layers/connectors/Connector"
import { openTarget } from "../../../layers/connectors/ConnectorPools"
import type { EgressPolicy } from "../../../layers/connectors/Connector"
import type { ConnectionInput } from "../../../src/domain/Connection"
import { mysqlAvailable, postgresAvailable } from "../../support/Servers"

const hasPostgres = await postgresAvailable()
const hasMysql = await mysqlAvailable()

/** A TCP port that counts the connections it receives and closes each one. */
const startListener = async () => {
  let accepted = 0
  const server = net.createServer((socket) => {
    accepted++
    socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/**
 * A policy that answers 127.0.0.1 for any name, and refuses from its `refuseFrom`-th check on (the
 * pool's open is the first check; each socket's lookup is a later one). The hosts below end in
 * .invalid, which resolves nowhere: a driver that resolved the name itself could not connect at all.
 */
const policy = (refuseFrom = Infinity) => {
  let checks = 0
  const egress: EgressPolicy = {
    check: (endpoint) =>
      ++checks >= refuseFrom
        ? Effect.fail(new ConnectorError({ step: "config", message: `This gateway does not connect to ${endpoint.host}: rebound` }))
        : Effect.succeed([{ address: "127.0.0.1", family: 4 }])
  }
  return { egress, checks: () => checks }
}

const run = (connection: ConnectionInput, egress: EgressPolicy) =>
  Effect.runPromise(
    Effect.either(
      Effect.scoped(
        Effect.flatMap(openTarget({ orgId: "o", connectionId: "c", version: 1, connection, secrets: [] }, egress), (pool) =>
          pool.query("select 1 as one", { timeoutMs: 5000, maxRows: 10 })
        )
      )
    )
  )

const failure = (result: Either.Either<unknown, ConnectorError>) => {
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left
}

const tcpConnections = (port: number): Record<string, ConnectionInput> => ({
  postgresql: { name: "pg", db_type: "postgresql", host: "pg.invalid", port, database: "postgres", username: "root", connection_timeout: 3 },
  mysql: { name: "my", db_type: "mysql", host: "my.invalid", port, username: "root", connection_timeout: 3 },
  mssql: { name: "ms", db_type: "mssql", host: "ms.invalid", port, username: "sa", password: "pw", connection_timeout: 3 },
  "ssh tunnel": {
    name: "tunnelled",
    db_type: "postgresql",
    host: "db.internal",
    database: "postgres",
    username: "root",
    connection_timeout: 3,
    ssh_tunnel: { host: "ssh.invalid", port, username: "tunnel", password: "pw" }
  } as ConnectionInput
})

describe("TCP drivers dial the addresses the egress policy checked, at every socket", () => {
  let listener: Awaited<ReturnType<typeof startListener>>
  beforeAll(async () => {
    listener = await startListener()
  })
  afterAll(async () => {
    await listener?.close()
  })

  for (const kind of ["postgresql", "mysql", "mssql", "ssh tunnel"]) {
    it(`${kind}: the socket reaches the policy's address, never the name's own`, async () => {
      const before = listener.accepted()
      const answering = policy()
      await run(tcpConnections(listener.port)[kind]!, answering.egress)
      // The pool's open checked once, and the socket's lookup checked again before it dialled.
      expect(answering.checks()).toBeGreaterThanOrEqual(2)
      expect(listener.accepted()).toBeGreaterThan(before)
    })

    it(`${kind}: allowed when the pool opens, refused when the socket opens: nothing is dialled`, async () => {
      const before = listener.accepted()
      const result = await run(tcpConnections(listener.port)[kind]!, policy(2).egress)
      expect(failure(result)).toMatchObject({ step: "config", message: expect.stringContaining("rebound") })
      expect(listener.accepted()).toBe(before)
    })
  }

  it.skipIf(!hasPostgres)("postgresql: a query runs over the pinned socket", async () => {
    const result = await run(tcpConnections(5432).postgresql!, policy().egress)
    expect(Either.getOrThrow(result).rows).toEqual([[1]])
  })

  it.skipIf(!hasMysql)("mysql: a query runs over the pinned socket", async () => {
    const result = await run(tcpConnections(3306).mysql!, policy().egress)
    expect(Either.getOrThrow(result).rows).toEqual([[1]])
  })
})
