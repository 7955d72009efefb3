import * as net from "node:net"

type Mode = "pass" | "blackhole"

interface Pair {
  readonly client: net.Socket
  readonly upstream: net.Socket | null
}

/**
 * A TCP relay on its own loopback port to a real server, that fails as networks and servers do:
 * `reset` sends a TCP reset on every open connection, `refuse` stops listening (new connections are
 * refused), `blackhole` accepts and reads but never forwards or answers (a stalled server or a
 * dropped route), `pass` relays again, and `cut` resets everything and stops listening.
 */
export class Relay {
  private server: net.Server | null = null
  private readonly pairs = new Set<Pair>()
  private mode: Mode = "pass"
  /** Connections the relay has accepted. */
  accepted = 0
  constructor(
    readonly port: number,
    private readonly upstream: { readonly host: string; readonly port: number } = { host: "127.0.0.1", port: 5432 }
  ) {}

  /** Listens (again) on the relay's port. */
  open() {
    if (this.server !== null) return Promise.resolve()
    const server = net.createServer((client) => this.accept(client))
    this.server = server
    return new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve))
  }

  /** Relays new connections again; connections that were blackholed stay silent until reset. */
  async pass() {
    this.mode = "pass"
    await this.open()
  }

  /** Every open connection gets a TCP reset; new connections are still accepted. */
  reset() {
    for (const pair of this.pairs) {
      for (const s of [pair.client, pair.upstream]) if (s !== null && !s.destroyed) s.resetAndDestroy()
    }
    this.pairs.clear()
  }

  /** New connections are refused; open ones carry on. */
  refuse() {
    const server = this.server
    this.server = null
    return new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  }

  /** Open and new connections are accepted and read, and nothing is ever forwarded or answered. */
  blackhole() {
    this.mode = "blackhole"
    for (const pair of this.pairs) this.silence(pair)
  }

  /** Resets every connection and stops listening. */
  cut() {
    this.reset()
    return this.refuse()
  }

  private accept(client: net.Socket) {
    this.accepted++
    client.on("error", () => undefined)
    if (this.mode === "blackhole") {
      const pair = { client, upstream: null }
      this.track(pair)
      this.silence(pair)
      return
    }
    const upstream = net.connect(this.upstream.port, this.upstream.host)
    upstream.on("error", () => undefined)
    const pair = { client, upstream }
    this.track(pair)
    client.pipe(upstream).pipe(client)
  }

  private track(pair: Pair) {
    this.pairs.add(pair)
    for (const s of [pair.client, pair.upstream]) {
      s?.once("close", () => {
        this.pairs.delete(pair)
        // A relayed peer that goes away closes the other side, as a direct connection would; a blackholed route tells nobody.
        if (this.mode === "pass") {
          pair.client.destroy()
          pair.upstream?.destroy()
        }
      })
    }
  }

  private silence(pair: Pair) {
    pair.client.unpipe()
    pair.upstream?.unpipe()
    pair.client.removeAllListeners("data")
    pair.client.on("data", () => undefined)
    pair.upstream?.removeAllListeners("data")
    pair.upstream?.on("data", () => undefined)
    pair.client.resume()
    pair.upstream?.resume()
  }
}
