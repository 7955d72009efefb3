import { spawn } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A git host for tests: git's own smart HTTP (`git http-backend`) over the bare repositories in
 * `root`, as a code host serves them. `token`: repositories named `private*` answer 401 without
 * HTTP Basic carrying it as the password. Paths under `/moved/` answer a redirect to the same
 * repository; under `/slow/`, the same repository a second later. `requests` lists the paths asked
 * for, when, and the Authorization each carried.
 */
export const startGitRemote = async (root: string, token: string) => {
  const requests: Array<{ readonly path: string; readonly authorization: string | undefined; readonly atMs: number }> = []
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://remote")
    requests.push({ path: url.pathname, authorization: req.headers.authorization, atMs: performance.now() })
    if (url.pathname.startsWith("/slow/")) {
      await new Promise((resolve) => setTimeout(resolve, 1000))
      url.pathname = url.pathname.replace("/slow/", "/")
    }
    if (url.pathname.startsWith("/moved/")) {
      res.writeHead(301, { location: url.pathname.replace("/moved/", "/") + url.search })
      return res.end()
    }
    if (url.pathname.startsWith("/private")) {
      const sent = /^Basic (.+)$/.exec(req.headers.authorization ?? "")?.[1]
      const password = sent === undefined ? null : Buffer.from(sent, "base64").toString("utf8").split(":").slice(1).join(":")
      if (password !== token) {
        res.writeHead(401, { "www-authenticate": 'Basic realm="git"' })
        return res.end()
      }
    }
    const child = spawn("git", ["http-backend"], {
      env: {
        PATH: process.env["PATH"] ?? "/usr/bin:/bin",
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: "1",
        GIT_CONFIG_NOSYSTEM: "1",
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? "GET",
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        ...(req.headers["git-protocol"] === undefined ? {} : { GIT_PROTOCOL: String(req.headers["git-protocol"]) }),
        ...(req.headers["content-encoding"] === undefined ? {} : { HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"]) })
      }
    })
    req.pipe(child.stdin)
    let head = Buffer.alloc(0)
    let headed = false
    child.stdout.on("data", (chunk: Buffer) => {
      if (headed) return void res.write(chunk)
      head = Buffer.concat([head, chunk])
      const end = head.indexOf("\r\n\r\n")
      if (end < 0) return
      headed = true
      const headers: Record<string, string> = {}
      let status = 200
      for (const line of head.subarray(0, end).toString("utf8").split("\r\n")) {
        const colon = line.indexOf(":")
        const name = line.slice(0, colon).trim().toLowerCase()
        const value = line.slice(colon + 1).trim()
        if (name === "status") status = Number(value.split(" ")[0])
        else headers[name] = value
      }
      res.writeHead(status, headers)
      res.write(head.subarray(end + 4))
    })
    child.on("close", () => res.end())
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}
