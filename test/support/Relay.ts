import * as net from "node:net"

/** A TCP relay on its own loopback port to a real server, that can be cut and restored as a flaky network would. */
export class Relay {
  private server: net.Server | null = null
  private readonly sockets = new Set<net.Socket>()
  /** Connections the relay has accepted. */
  accepted = 0
  constructor(
    readonly port: number,
    private readonly upstream: { readonly host: string; readonly port: number } = { host: "127.0.0.1", port: 5432 }
  ) {}
  open() {
    this.server = net.createServer((client) => {
      this.accepted++
      const upstream = net.connect(this.upstream.port, this.upstream.host)
      for (const s of [client, upstream]) {
        this.sockets.add(s)
        s.on("error", () => undefined)
        s.once("close", () => this.sockets.delete(s))
      }
      client.pipe(upstream).pipe(client)
    })
    return new Promise<void>((resolve) => this.server!.listen(this.port, "127.0.0.1", resolve))
  }
  cut() {
    for (const s of this.sockets) s.destroy()
    return new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }
}
