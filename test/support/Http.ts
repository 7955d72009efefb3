import * as http from "node:http"

export interface HttpResult {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
  readonly json: any
}

export interface RequestOptions {
  readonly method?: string
  readonly key?: string | null
  readonly body?: unknown
  readonly rawBody?: Buffer | string
  readonly headers?: Record<string, string>
  readonly chunked?: boolean
}

// An idle socket is closed before the server's 5 s keep-alive timeout closes it: a request sent on a
// socket the server is closing at that instant fails with "socket hang up". Busy sockets are unaffected.
const agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 4_000 })

/** One request over node:http, so tests control every header (Host, Origin, X-Forwarded-For). */
export const request = (baseUrl: string, path: string, options: RequestOptions = {}): Promise<HttpResult> =>
  new Promise((resolve, reject) => {
    const url = new URL(path, baseUrl)
    const body =
      options.rawBody ?? (options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body)))
    const headers: Record<string, string> = {
      ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(options.key ? { "x-api-key": options.key } : {}),
      ...options.headers
    }
    if (body !== undefined && !options.chunked) headers["content-length"] = String(Buffer.byteLength(body))
    const req = http.request(url, { method: options.method ?? (body === undefined ? "GET" : "POST"), headers, agent }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let json: unknown = undefined
        try {
          json = JSON.parse(text)
        } catch {
          json = undefined
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
      })
      res.on("error", reject)
    })
    req.on("error", reject)
    if (body !== undefined) req.write(body)
    req.end()
  })
