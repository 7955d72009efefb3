import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/** A throwaway self-signed certificate for 127.0.0.1 and localhost, made with the openssl CLI. */
export const selfSignedCertificate = (): { key: string; cert: string } => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-cert-"))
  try {
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
      "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
      "-keyout", path.join(dir, "key.pem"), "-out", path.join(dir, "cert.pem")
    ], { stdio: "ignore" })
    return { key: fs.readFileSync(path.join(dir, "key.pem"), "utf8"), cert: fs.readFileSync(path.join(dir, "cert.pem"), "utf8") }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Serves `handle` on a free loopback port, over HTTPS when given a certificate; a handler that throws drops the socket. */
export const listenFake = async (
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>,
  tls?: { readonly key: string; readonly cert: string }
) => {
  const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
    handle(req, res).catch(() => res.destroy())
  }
  const server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, listener) : http.createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, port: (server.address() as AddressInfo).port }
}
