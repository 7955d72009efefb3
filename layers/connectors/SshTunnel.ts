import { createHash } from "node:crypto"
import * as net from "node:net"
import { Effect, type Scope } from "effect"
import { Client, type ConnectConfig } from "ssh2"
import type { SshTunnel } from "../../src/domain/Connection"
import { ConnectorError, type Endpoint } from "./Connector"

const KEEPALIVE_MS = 15_000
const KEEPALIVE_MISSES = 3

/** OpenSSH's form: "SHA256:" and the unpadded base64 of the key's SHA-256. */
export const hostKeyFingerprint = (key: Buffer) => `SHA256:${createHash("sha256").update(key).digest("base64").replace(/=+$/, "")}`

export interface OpenTunnel {
  /** The local end: drivers dial this instead of the database. */
  readonly endpoint: Endpoint
  /** The SSH server's host key as seen on the first connect. */
  readonly fingerprint: string
  /** Why the last reconnect failed, while the tunnel is down; drivers only see a closed socket. */
  readonly failure: () => ConnectorError | null
}

const sshError = (message: string) => new ConnectorError({ step: "ssh", message })

export const hostKeyChanged = (pinned: string, offered: string) =>
  sshError(
    `The SSH server's host key changed (pinned ${pinned}, offered ${offered}); the connection was refused. ` +
      "If the server was re-keyed on purpose, set ssh_tunnel.host_key_fingerprint to the offered key to pin it."
  )

const describe = (error: Error & { level?: string; code?: string }, hostKeyRejected: string | null, pinned: string | null) => {
  if (error instanceof ConnectorError) return error
  if (hostKeyRejected !== null && pinned !== null) return hostKeyChanged(pinned, hostKeyRejected)
  if (error.level === "client-authentication") return sshError("The SSH server refused the login (check the tunnel username and key or password)")
  if (error.level === "client-timeout") return sshError("The SSH server did not complete the handshake in time")
  if (error.code === "ENOTFOUND" || error.code === "EAI_AGAIN") return sshError("The SSH host name does not resolve")
  if (error.message.includes("passphrase")) return sshError("The SSH private key could not be decrypted (check the passphrase)")
  if (error.message.includes("private key") || error.message.includes("privateKey")) return sshError("The SSH private key is not a valid key")
  return sshError("The SSH server could not be reached (is it running, and are the tunnel host and port right?)")
}

/**
 * One SSH connection shared by a connection's pool, forwarding each local socket to `target`.
 * The host key is pinned: `pinned` (or, when there is none yet, the first key seen) is the only one
 * accepted, on the first connect and on every reconnect after the SSH connection drops.
 */
export const openTunnel = (options: {
  readonly tunnel: SshTunnel
  readonly target: Endpoint
  readonly pinned: string | null
  readonly connectTimeoutMs: number
  /** Resolves the SSH server's name through the egress policy at every (re)connect. */
  readonly lookup?: net.LookupFunction
}): Effect.Effect<OpenTunnel, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const { tunnel, target } = options
    let pinned = options.pinned
    let current: Promise<Client> | null = null
    let failure: ConnectorError | null = null
    const sockets = new Set<net.Socket>()

    // ssh2 would resolve the name itself: it is given the address the policy has just checked (the host key, not the name, is verified).
    const checkedAddress = () =>
      new Promise<string>((resolve, reject) => {
        const lookup = options.lookup
        if (lookup === undefined) return resolve(tunnel.host)
        lookup(tunnel.host, { all: false }, (error, address) => (error ? reject(error) : resolve(address as string)))
      })

    const dial = (host: string) =>
      new Promise<Client>((resolve, reject) => {
        const client = new Client()
        let rejectedKey: string | null = null
        const config: ConnectConfig = {
          host,
          port: tunnel.port ?? 22,
          username: tunnel.username,
          readyTimeout: options.connectTimeoutMs,
          keepaliveInterval: KEEPALIVE_MS,
          keepaliveCountMax: KEEPALIVE_MISSES,
          hostVerifier: (key: Buffer) => {
            const seen = hostKeyFingerprint(key)
            pinned ??= seen
            if (seen === pinned) return true
            rejectedKey = seen
            return false
          },
          ...(tunnel.password !== undefined ? { password: tunnel.password } : {}),
          ...(tunnel.private_key !== undefined ? { privateKey: tunnel.private_key } : {}),
          ...(tunnel.passphrase !== undefined ? { passphrase: tunnel.passphrase } : {})
        }
        client.once("ready", () => resolve(client))
        client.on("error", (error) => reject(describe(error, rejectedKey, pinned)))
        try {
          client.connect(config)
        } catch (error) {
          reject(describe(error as Error, null, pinned))
        }
      })

    const connect = () => checkedAddress().then(dial, (error: Error) => Promise.reject(describe(error, null, pinned)))

    // One SSH connection at a time; one that failed or dropped is replaced by the next socket that needs it.
    const ready = (): Promise<Client> => {
      if (current !== null) return current
      const attempt = connect()
      current = attempt
      const forget = () => {
        if (current === attempt) current = null
      }
      attempt.then(
        (client) => {
          failure = null
          client.once("close", forget)
        },
        (error: ConnectorError) => {
          failure = error
          forget()
        }
      )
      return attempt
    }

    const forward = (socket: net.Socket) => {
      sockets.add(socket)
      socket.once("close", () => sockets.delete(socket))
      socket.on("error", () => socket.destroy())
      ready().then(
        (client) =>
          client.forwardOut("127.0.0.1", socket.remotePort ?? 0, target.host, target.port, (error, stream) => {
            if (error || socket.destroyed) return socket.destroy()
            stream.on("error", () => socket.destroy())
            socket.once("close", () => stream.destroy())
            socket.pipe(stream).pipe(socket)
          }),
        () => socket.destroy()
      )
    }

    yield* Effect.acquireRelease(
      Effect.tryPromise({ try: ready, catch: (error) => (error instanceof ConnectorError ? error : sshError("The SSH tunnel could not be opened")) }),
      () => Effect.sync(() => void current?.then((client) => client.end(), () => undefined))
    )
    const server = net.createServer(forward)
    const endpoint = yield* Effect.acquireRelease(
      Effect.async<Endpoint, ConnectorError>((resume) => {
        server.once("error", () => resume(Effect.fail(sshError("The gateway could not open a local port for the SSH tunnel"))))
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ host: "127.0.0.1", port: (server.address() as net.AddressInfo).port })))
      }),
      () =>
        Effect.async<void>((resume) => {
          for (const socket of sockets) socket.destroy()
          server.close(() => resume(Effect.void))
        })
    )
    return { endpoint, fingerprint: pinned!, failure: () => failure }
  })
