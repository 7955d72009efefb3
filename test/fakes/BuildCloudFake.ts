import type * as http from "node:http"
import { listenFake } from "./FakeServer"

/** A project as the build service's Admin API v3 lists it. */
export interface BuildCloudFakeProject {
  readonly id: number
  readonly name: string
  readonly state?: number
  readonly dbt_project_subdirectory?: string | null
  readonly repository?: { readonly remote_url: string } | null
  readonly connection?: { readonly type: string } | null
}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

const status = (code: number, message: string) => ({ code, is_success: code < 400, user_message: message, developer_message: "" })

/**
 * The part of a hosted dbt build service's Admin API v3 that discovery uses: GET
 * /api/v3/accounts/{id}/projects/ with limit/offset pages (100 at most), `Authorization: Token …`
 * (or Bearer), dbt Cloud's envelope (`data`, `status`, `extra.pagination`).
 */
export const startBuildCloudFake = async (options: { readonly token: string; readonly accountId: number; readonly projects: ReadonlyArray<BuildCloudFakeProject> }) => {
  const requests: Array<{ readonly path: string; readonly authorization: string | undefined }> = []
  const fake = await listenFake(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake")
    requests.push({ path: `${url.pathname}${url.search}`, authorization: req.headers.authorization })
    const auth = req.headers.authorization ?? ""
    if (auth !== `Token ${options.token}` && auth !== `Bearer ${options.token}`) return json(res, 401, { status: status(401, "Invalid token."), data: null })
    const match = /^\/api\/v3\/accounts\/(\d+)\/projects\/$/.exec(url.pathname)
    if (req.method !== "GET" || match === null) return json(res, 404, { status: status(404, "Not found."), data: null })
    if (Number(match[1]) !== options.accountId) return json(res, 404, { status: status(404, "Account not found."), data: null })
    const limit = Number(url.searchParams.get("limit") ?? 100)
    const offset = Number(url.searchParams.get("offset") ?? 0)
    if (!Number.isInteger(limit) || limit < 1 || limit > 100 || !Number.isInteger(offset) || offset < 0) return json(res, 400, { status: status(400, "Invalid pagination."), data: null })
    const page = options.projects.slice(offset, offset + limit).map((p) => ({
      account_id: options.accountId,
      state: 1,
      dbt_project_subdirectory: null,
      created_at: "2026-01-02 03:04:05.678901+00:00",
      repository: null,
      connection: null,
      ...p
    }))
    json(res, 200, { status: status(200, "Success!"), data: page, extra: { filters: { limit, offset }, order_by: "id", pagination: { count: page.length, total_count: options.projects.length } } })
  })
  return {
    url: `http://127.0.0.1:${fake.port}`,
    requests,
    stop: () => new Promise<void>((resolve) => fake.server.close(() => resolve()))
  }
}
