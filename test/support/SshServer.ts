import * as net from "node:net"
import ssh2, { type Connection as SshSession } from "ssh2"
import { hostKeyFingerprint } from "../../layers/connectors/SshTunnel"

// ssh2 is CommonJS whose Server and utils Node's ESM loader cannot name (tsx scripts load this too).
const { Server, utils } = ssh2

export const TUNNEL_PASSWORD = "tunnel-pw-7f3a9c"
export const KEY_PASSPHRASE = "key-passphrase-51d2"
/**
 * ssh2's generator writes about 1 in 256 ed25519 keys it cannot read back (it strips a leading zero
 * byte of the public key: mscdex/ssh2#1513), so keep only pairs that parse.
 */
export const ed25519 = (passphrase?: string) => {
  for (;;) {
    const pair =
      passphrase === undefined
        ? utils.generateKeyPairSync("ed25519")
        : utils.generateKeyPairSync("ed25519", { passphrase, cipher: "aes256-ctr", rounds: 16 })
    if (!(utils.parseKey(pair.public) instanceof Error) && !(utils.parseKey(pair.private, passphrase) instanceof Error)) return pair
  }
}
export const userKey = ed25519(KEY_PASSPHRASE)
const allowedKey = utils.parseKey(userKey.public) as ReturnType<typeof utils.parseKey> & { getPublicSSH(): Buffer; verify(...a: Array<unknown>): boolean }

/** A real SSH server (ssh2's), forwarding direct-tcpip channels like OpenSSH's AllowTcpForwarding. */
export class SshServer {
  readonly sessions = new Set<SshSession>()
  forwarded = 0
  private server: InstanceType<typeof Server> | null = null
  constructor(readonly hostKey = ed25519()) {}

  get fingerprint() {
    const parsed = utils.parseKey(this.hostKey.public) as unknown as { getPublicSSH(): Buffer }
    return hostKeyFingerprint(parsed.getPublicSSH())
  }

  listen(port = 0) {
    this.server = new Server({ hostKeys: [this.hostKey.private] }, (session) => {
      this.sessions.add(session)
      session.on("close", () => this.sessions.delete(session))
      session.on("error", () => undefined)
      session.on("authentication", (ctx) => {
        if (ctx.username !== "tunnel") return ctx.reject()
        if (ctx.method === "password" && ctx.password === TUNNEL_PASSWORD) return ctx.accept()
        if (ctx.method === "publickey" && ctx.key.data.equals(allowedKey.getPublicSSH())) {
          if (ctx.signature === undefined) return ctx.accept()
          if (allowedKey.verify(ctx.blob, ctx.signature, ctx.hashAlgo)) return ctx.accept()
        }
        ctx.reject(["password", "publickey"])
      })
      session.on("ready", () =>
        session.on("tcpip", (accept, _reject, info) => {
          this.forwarded++
          const channel = accept()
          const socket = net.connect(info.destPort, info.destIP)
          socket.on("error", () => channel.destroy())
          channel.on("error", () => socket.destroy())
          channel.pipe(socket).pipe(channel)
        })
      )
    })
    return new Promise<number>((resolve) => this.server!.listen(port, "127.0.0.1", () => resolve((this.server!.address() as net.AddressInfo).port)))
  }

  /** Drops every SSH connection, as a restart or a network cut would. */
  dropAll() {
    for (const session of this.sessions) session.end()
  }

  close() {
    this.dropAll()
    return new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }
}
