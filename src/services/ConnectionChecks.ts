import { lookup } from "node:dns/promises"
import { access, constants } from "node:fs/promises"
import * as net from "node:net"
import { Effect, Either } from "effect"
import { ConnectorError } from "../../layers/connectors/Connector"
import { CONNECTORS } from "../../layers/connectors/Connectors"
import { ConnectorPools, type PoolTarget } from "../../layers/connectors/ConnectorPools"
import type { ConnectionInput } from "../domain/Connection"
import { ConnectionId, type OrgId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { ConnectionHealthRepo, type HealthCheck } from "../repos/ConnectionHealthRepo"
import { Connections } from "./Connections"

export interface DiagnoseStep {
  readonly step: string
  readonly status: "ok" | "failed" | "skipped"
  readonly duration_ms: number
  readonly detail: string
}

const PING_GRACE_MS = 5_000
const elapsed = (started: number) => Number((performance.now() - started).toFixed(3))

type PingOutcome = { readonly ok: boolean; readonly latency_ms: number; readonly error?: string; readonly step?: string }

/** A ping's outcome as a row of the connection's health history. */
export const asHealthCheck = (orgId: OrgId, connectionId: ConnectionId, outcome: PingOutcome): HealthCheck => ({
  org_id: orgId,
  connection_id: connectionId,
  ok: outcome.ok,
  latency_ms: outcome.latency_ms,
  step: outcome.step ?? null,
  error: outcome.error ?? null
})

const connectTimeoutMs = (c: ConnectionInput) => (c.connection_timeout ?? 10) * 1000

const networkEndpoint = (c: ConnectionInput) => CONNECTORS[c.db_type]?.address(c as never) ?? null

const tcpProbe = (host: string, port: number, timeoutMs: number) =>
  Effect.async<void, string>((resume) => {
    const socket = net.connect({ host, port })
    const done = (outcome: Effect.Effect<void, string>) => {
      socket.destroy()
      resume(outcome)
    }
    socket.setTimeout(timeoutMs, () => done(Effect.fail("timed out")))
    socket.once("connect", () => done(Effect.void))
    socket.once("error", (e: NodeJS.ErrnoException) => done(Effect.fail(e.code === "ECONNREFUSED" ? "connection refused" : "unreachable")))
    return Effect.sync(() => socket.destroy())
  })

/** Test, test-credentials and diagnose: what a person runs to find out why a connection does not work. */
export class ConnectionChecks extends Effect.Service<ConnectionChecks>()("sluice/ConnectionChecks", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections
    const pools = yield* ConnectorPools
    const health = yield* ConnectionHealthRepo

    const outcome = (started: number, result: Either.Either<unknown, ConnectorError>) =>
      Either.match(result, {
        onRight: () => ({ ok: true, latency_ms: elapsed(started) }),
        onLeft: (error) => ({ ok: false, latency_ms: elapsed(started), error: error.message, step: error.step })
      })

    const withDeadline = (target: PoolTarget) =>
      Effect.timeoutFail({
        duration: connectTimeoutMs(target.connection) + PING_GRACE_MS,
        onTimeout: () => new ConnectorError({ step: "timeout", message: "The database did not answer in time" })
      })

    const pingWith = (target: PoolTarget, within: typeof pools.withCheckPool) =>
      Effect.suspend(() => {
        const started = performance.now()
        return within(target, (pool) => pool.ping).pipe(
          withDeadline(target),
          Effect.either,
          Effect.map((result) => outcome(started, result))
        )
      })

    /** A person's Test pings through the connection's shared pool, as the queries that follow will. */
    const ping = (target: PoolTarget) => pingWith(target, pools.withPool)

    /** The health loop's ping: through the pool open for requests, or a connection of its own closed after it (ConnectorPools.withCheckPool). */
    const check = (target: PoolTarget) => pingWith(target, pools.withCheckPool)

    /** A person's Test also counts as a health check, so a new connection's health is known now rather than at the next round. */
    const test = Effect.fn("ConnectionChecks.test")(function* (principal: Principal, name: string) {
      const target = yield* connections.target(principal, name)
      const outcome: PingOutcome = yield* ping(target)
      yield* health
        .record([asHealthCheck(principal.orgId, ConnectionId.make(target.connectionId), outcome)])
        .pipe(Effect.catchAll((error) => Effect.logWarning("a test's result could not be kept as a health check", error.message)))
      return outcome
    })

    /** Connects once with settings that are not stored, then closes. */
    const testCredentials = Effect.fn("ConnectionChecks.testCredentials")(function* (principal: Principal, body: ConnectionInput) {
      const target = yield* connections.transientTarget(principal, body)
      const started = performance.now()
      const result = yield* Effect.scoped(Effect.flatMap(pools.openOnce(target), (pool) => pool.ping)).pipe(withDeadline(target), Effect.either)
      return outcome(started, result)
    })

    /** Each step on its own, stopping at the first failure: DNS, TCP, TLS, login, privileges (or the file, for local types). */
    const diagnose = Effect.fn("ConnectionChecks.diagnose")(function* (principal: Principal, name: string) {
      const target = yield* connections.target(principal, name)
      const c = target.connection
      const steps: Array<DiagnoseStep> = []
      const record = (step: string, started: number, either: Either.Either<string, string>) => {
        steps.push({ step, status: Either.isRight(either) ? "ok" : "failed", duration_ms: elapsed(started), detail: Either.merge(either) })
        return Either.isRight(either)
      }
      const skip = (step: string, detail: string) => steps.push({ step, status: "skipped", duration_ms: 0, detail })
      const finish = () => ({ ok: steps.every((s) => s.status !== "failed"), steps })

      const tunnel = "ssh_tunnel" in c ? c.ssh_tunnel : undefined
      // Through a tunnel the gateway itself dials only the SSH server; the database is reached from there.
      const endpoint = tunnel === undefined ? networkEndpoint(c) : { host: tunnel.host, port: tunnel.port ?? 22 }
      const what = tunnel === undefined ? "" : "SSH server: "
      if (endpoint !== null) {
        let started = performance.now()
        const dns = yield* Effect.tryPromise(() => lookup(endpoint.host, { all: true })).pipe(
          Effect.map((addresses) => `${what}resolved to ${addresses.length} address${addresses.length === 1 ? "" : "es"}`),
          Effect.mapError(() => `${what}the host name does not resolve`),
          Effect.either
        )
        if (!record("dns", started, dns)) return finish()
        started = performance.now()
        const tcp = yield* tcpProbe(endpoint.host, endpoint.port, connectTimeoutMs(c)).pipe(
          Effect.as(`${what}port ${endpoint.port} accepts connections`),
          Effect.either
        )
        if (!record("tcp", started, tcp)) return finish()
      } else if ("database" in c && (c.db_type === "duckdb" || c.db_type === "sqlite")) {
        const started = performance.now()
        const file = yield* Effect.tryPromise(() => access(c.database, constants.R_OK)).pipe(
          Effect.as("the file exists and is readable"),
          Effect.mapError(() => "the file does not exist or is not readable by the gateway"),
          Effect.either
        )
        if (!record("file", started, file)) return finish()
      }

      const tlsMode = "tls" in c ? c.tls?.mode : undefined
      const connector = CONNECTORS[c.db_type]
      const started = performance.now()
      const opened = yield* Effect.scoped(
        Effect.gen(function* () {
          const pool = yield* pools.openOnce(target)
          yield* pool.ping
          const loginMs = elapsed(started)
          const probeStarted = performance.now()
          const probe = yield* pool
            .query(connector?.privilegesProbe ?? "select 1", { timeoutMs: connectTimeoutMs(c), maxRows: 1 })
            .pipe(Effect.either)
          return { loginMs, probe, probeMs: elapsed(probeStarted) }
        })
      ).pipe(withDeadline(target), Effect.either)

      if (Either.isLeft(opened)) {
        const error = opened.left
        steps.push({ step: error.step === "query" ? "auth" : error.step, status: "failed", duration_ms: elapsed(started), detail: error.message })
        return finish()
      }
      if (tunnel !== undefined) steps.push({ step: "ssh", status: "ok", duration_ms: 0, detail: "the tunnel opened with the pinned host key (timed with the login)" })
      if (connector?.alwaysTls?.(c as never) === true) steps.push({ step: "tls", status: "ok", duration_ms: 0, detail: "HTTPS, negotiated as part of the login" })
      else if (tlsMode === undefined || tlsMode === "disable" || tlsMode === "allow") skip("tls", "TLS is not requested for this connection")
      else steps.push({ step: "tls", status: "ok", duration_ms: 0, detail: `negotiated as part of the login (mode ${tlsMode})` })
      steps.push({ step: "auth", status: "ok", duration_ms: opened.right.loginMs, detail: "logged in and ran a statement" })
      const probe = opened.right.probe
      steps.push(
        Either.isRight(probe)
          ? { step: "privileges", status: "ok", duration_ms: opened.right.probeMs, detail: `${String(probe.right.rows[0]?.[0] ?? 0)} readable tables and views` }
          : { step: "privileges", status: "failed", duration_ms: opened.right.probeMs, detail: probe.left.message }
      )
      return finish()
    })

    /** The org's open pools and how busy each is. */
    const poolStats = (principal: Principal) => ({ pools: pools.stats(principal.orgId) })

    return { ping, check, test, testCredentials, diagnose, poolStats } as const
  }),
  dependencies: [ConnectionHealthRepo.Default, Connections.Default, ConnectorPools.Default]
}) {}
