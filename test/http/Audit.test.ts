import type { AuditEntry } from "../../src/domain/Audit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { type HttpResult, request } from "../support/Http"

type Entry = typeof AuditEntry.Encoded

const ENTRY_FIELDS = [
  "id", "timestamp", "principal", "key_id", "key_name", "user_id", "event_type", "method", "route", "status", "connection",
  "sql", "outcome", "block_reason", "rows", "duration_ms", "client_ip", "user_agent", "request_id", "details"
]
const CSV_HEADER = ENTRY_FIELDS.join(",")
const INJECTION = "=cmd|' /C calc'!A0"

const rid = (res: HttpResult) => String(res.headers["x-request-id"])
const byId = (a: { id: string }, b: { id: string }) => Number(b.id) - Number(a.id)
const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const expectStrictlyNewestFirst = (items: ReadonlyArray<{ id: string }>) => {
  const ids = items.map((i) => Number(i.id))
  expect(ids, "ids must be strictly decreasing (newest first)").toEqual([...ids].sort((a, b) => b - a))
  expect(new Set(ids).size).toBe(ids.length)
}

/** RFC 4180: quoted cells may hold commas, doubled quotes and line breaks; records end with CRLF. */
const parseCsv = (text: string): Array<Array<string>> => {
  const records: Array<Array<string>> = []
  let record: Array<string> = []
  let cell = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"'
        i++
      } else if (c === '"') quoted = false
      else cell += c
    } else if (c === '"') quoted = true
    else if (c === ",") {
      record.push(cell)
      cell = ""
    } else if (c === "\r" && text[i + 1] === "\n") {
      record.push(cell)
      records.push(record)
      record = []
      cell = ""
      i++
    } else cell += c
  }
  if (cell !== "" || record.length > 0) {
    record.push(cell)
    records.push(record)
  }
  return records
}

describe("audit log over HTTP (embedded store)", () => {
  let gateway: Gateway
  let admin: string
  let reader: { id: string; key: string; prefix: string }
  /** Everything the read-only key did, in order. */
  const readerOk: Array<string> = []
  const readerRefused: Array<{ requestId: string; route: string; res: HttpResult }> = []
  /** Refusals before any key was recognised: self-hosted has one org, so its admins see them (brute force shows). */
  const anonymous401: Array<string> = []

  const api = (path: string, options: Parameters<typeof request>[2] = {}) => request(gateway.url, path, options)
  const createKey = async (name: string, scopes: Array<string>) => {
    const res = await api("/api/keys", { key: admin, body: { name, scopes } })
    expect(res.status).toBe(201)
    return res.json as { id: string; key: string; prefix: string }
  }
  /** Every matching row (well under one page of 500 in this file). */
  const list = async (query = "", key = admin) => {
    const res = await api(`/api/audit?limit=500${query ? `&${query}` : ""}`, { key })
    expect(res.status, res.text).toBe(200)
    expect(res.json.next_cursor).toBeNull()
    return { items: res.json.items as Array<Entry>, requestId: rid(res) }
  }
  const exportJson = async (query = "", key = admin) => {
    const res = await api(`/api/audit/export?format=json${query ? `&${query}` : ""}`, { key })
    expect(res.status, res.text).toBe(200)
    return { rows: res.json as Array<Entry>, res }
  }

  beforeAll(async () => {
    gateway = await startApp()
    admin = await localKey(gateway)
    reader = await createKey("audit-reader", ["read"])

    for (let i = 0; i < 3; i++) {
      const res = await api("/api/plan", { key: reader.key })
      expect(res.status).toBe(200)
      readerOk.push(rid(res))
    }
    for (const path of ["/api/keys", "/api/keys?limit=3", "/api/audit/export?format=csv"]) {
      const res = await api(path, { key: reader.key })
      expect([res.status, res.json.code]).toEqual([403, "insufficient_scope"])
      readerRefused.push({ requestId: rid(res), route: path.split("?")[0]!, res })
    }
    const unknownKey = { key: `sp_${"0".repeat(32)}` }
    const noKeyViaProxy = { headers: { "x-forwarded-for": "203.0.113.9" } } // not a local peer, so no local access
    const basic = { headers: { authorization: "Basic YTpi" } }
    for (const options of [unknownKey, noKeyViaProxy, basic]) {
      const res = await api("/api/plan", options)
      expect(res.status).toBe(401)
      anonymous401.push(rid(res))
    }
    // Some admin traffic, including errors (400) and a not-found (404).
    for (const path of ["/api/plan", "/api/settings", "/api/security/status", "/api/audit?limit=0", "/api/nothing-here"]) {
      await api(path, { key: admin })
    }
  })
  afterAll(() => gateway?.stop())

  it("lists org rows with every field but org_id; request_id is the x-request-id and route drops the query", async () => {
    const marker = await api("/api/plan?probe=1&x=y", { key: admin, headers: { "user-agent": "audit-marker/1.0" } })
    expect(marker.status).toBe(200)
    const { items } = await list()
    const row = items.find((i) => i.request_id === rid(marker))
    expect(row).toBeDefined()
    expect(Object.keys(row!).sort()).toEqual([...ENTRY_FIELDS].sort())
    expect(row).toMatchObject({
      event_type: "api",
      method: "GET",
      route: "/api/plan",
      status: 200,
      outcome: "success",
      block_reason: null,
      user_agent: "audit-marker/1.0",
      client_ip: "127.0.0.1"
    })
    expect(row!.key_id).toMatch(/^key_local_/)
    expect(Math.abs(row!.timestamp - Date.now() / 1000)).toBeLessThan(30)
    expect(row!.duration_ms).toBeGreaterThanOrEqual(0)
    for (const item of items) expect(item).not.toHaveProperty("org_id")
    // /health is never audited; neither is /local-api-key (no principal).
    expect(items.some((i) => i.route === "/health" || i.route === "/local-api-key")).toBe(false)
  })

  it("lists newest first (ids strictly decreasing), in the list and in the export", async () => {
    const { items } = await list()
    expect(items.length).toBeGreaterThanOrEqual(10)
    expectStrictlyNewestFirst(items)
    const { rows } = await exportJson()
    expectStrictlyNewestFirst(rows)
  })

  it("outcome=refused shows the 403 insufficient_scope rows with their block_reason, and the keyless 401s of this one-org gateway", async () => {
    const { items } = await list("outcome=refused")
    expect(items.length).toBeGreaterThanOrEqual(readerRefused.length)
    for (const item of items) expect(item.outcome).toBe("refused")
    for (const refused of readerRefused) {
      const row = items.find((i) => i.request_id === refused.requestId)
      expect(row, refused.route).toMatchObject({
        key_id: reader.id,
        principal: `key:${reader.prefix}`,
        method: "GET",
        route: refused.route,
        status: 403,
        outcome: "refused",
        block_reason: "insufficient_scope"
      })
    }
    const all = await list()
    const exported = await exportJson()
    for (const id of anonymous401) {
      expect(items.find((i) => i.request_id === id)).toMatchObject({ status: 401, outcome: "refused", principal: null, key_id: null, route: "/api/plan" })
      expect(all.items.some((i) => i.request_id === id)).toBe(true)
      expect(exported.rows.some((i) => i.request_id === id)).toBe(true)
    }
  })

  it("outcome=success and outcome=error partition the rest; an unknown outcome is a 400", async () => {
    const all = await list()
    const success = await list("outcome=success")
    const error = await list("outcome=error")
    const refused = await list("outcome=refused")
    for (const item of success.items) expect(item.outcome).toBe("success")
    for (const item of error.items) {
      expect(item.outcome).toBe("error")
      expect(item.block_reason).toBeNull()
    }
    expect(error.items.some((i) => i.status === 400 && i.route === "/api/audit")).toBe(true)
    // Only the first list's own row (a success) is new by the time the success list runs; the later
    // lists' own rows are successes too, so the error and refused lists cannot see them.
    expect(success.items.length + error.items.length + refused.items.length).toBe(all.items.length + 1)
    const bad = await api("/api/audit?outcome=blocked", { key: admin })
    expect([bad.status, bad.json.code]).toEqual([400, "invalid_request"])
  })

  it("exclude_reads=true leaves out plain GET requests to /api and keeps everything else; a value that is not a boolean is a 400", async () => {
    const all = await list()
    const kept = await list("exclude_reads=true")
    expect(kept.items.length).toBeGreaterThan(0)
    for (const item of kept.items) expect(item.event_type === "api" && item.method === "GET").toBe(false)
    const keptIds = new Set(kept.items.map((i) => i.id))
    for (const item of all.items) if (!(item.event_type === "api" && item.method === "GET")) expect(keptIds.has(item.id), item.route).toBe(true)
    expect(all.items.some((i) => i.event_type === "api" && i.method === "GET")).toBe(true)
    const bad = await api("/api/audit?exclude_reads=maybe", { key: admin })
    expect([bad.status, bad.json.code]).toEqual([400, "invalid_request"])
  })

  it("key_id filter returns exactly that key's rows; event_type filter narrows by type", async () => {
    const { items } = await list(`key_id=${reader.id}`)
    expect(new Set(items.map((i) => i.request_id))).toEqual(
      new Set([...readerOk, ...readerRefused.map((r) => r.requestId)])
    )
    // Rows name the key while it exists (the local key's are "local"), beside its prefix.
    for (const item of items) expect(item).toMatchObject({ key_id: reader.id, key_name: "audit-reader", principal: `key:${reader.prefix}` })
    expect((await list("key_id=key_nobody_has_this")).items).toEqual([])

    const apiRows = await list(`key_id=${reader.id}&event_type=api`)
    expect(apiRows.items.length).toBe(items.length)
    expect((await list("event_type=no_such_event")).items).toEqual([])
  })

  it("from/to filter by epoch seconds or ISO time, both bounds inclusive", async () => {
    const timer = await createKey("audit-timer", ["read"])
    const a = await api("/api/plan", { key: timer.key })
    const [rowA] = (await list(`key_id=${timer.id}`)).items
    expect(rowA!.request_id).toBe(rid(a))
    const tA = rowA!.timestamp
    const wait = (tA + 1) * 1000 + 50 - Date.now()
    if (wait > 0) await sleep(wait)
    const b = await api("/api/plan", { key: timer.key })
    const rowB = (await list(`key_id=${timer.id}`)).items.find((i) => i.request_id === rid(b))!
    const tB = rowB.timestamp
    expect(tB).toBeGreaterThan(tA)

    const ids = async (query: string) => (await list(`key_id=${timer.id}&${query}`)).items.map((i) => i.request_id)
    expect(await ids(`from=${tA}`)).toEqual(expect.arrayContaining([rid(a), rid(b)]))
    expect(await ids(`from=${tB}`)).toEqual([rid(b)])
    expect(await ids(`to=${tA}`)).toEqual([rid(a)])
    expect(await ids(`from=${tA}&to=${tA}`)).toEqual([rid(a)])
    expect(await ids(`from=${tB + 1}`)).toEqual([])
    expect(await ids(`from=${tB}&to=${tA}`)).toEqual([])
    expect(await ids(`from=${encodeURIComponent(new Date(tB * 1000).toISOString())}`)).toEqual([rid(b)])
    expect(await ids(`to=${encodeURIComponent(new Date(tA * 1000 + 999).toISOString())}`)).toEqual([rid(a)])
    expect(await ids("to=2000-01-01T00:00:00Z")).toEqual([])

    for (const bad of ["from=garbage", "to=yesterday", "from=99999999999999"]) {
      const res = await api(`/api/audit?${bad}`, { key: admin })
      expect([res.status, res.json.code], bad).toEqual([400, "invalid_request"])
    }
  })

  it("cursor pagination with limit=2 over one key's rows: no duplicates, no gaps, null cursor at the end", async () => {
    const pager = await createKey("audit-pager", ["read"])
    const made: Array<string> = []
    for (let i = 0; i < 7; i++) made.push(rid(await api("/api/plan", { key: pager.key })))

    const walked: Array<Entry> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res: HttpResult = await api(
        `/api/audit?key_id=${pager.id}&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
        { key: admin }
      )
      expect(res.status, res.text).toBe(200)
      expect(res.json.items.length).toBeLessThanOrEqual(2)
      walked.push(...res.json.items)
      cursor = res.json.next_cursor
      pages++
    } while (cursor !== null && pages < 20)
    expect(pages).toBe(4)
    expect(walked.map((i) => i.request_id)).toEqual([...made].reverse())
    expectStrictlyNewestFirst(walked)
    expect(walked).toEqual((await list(`key_id=${pager.id}`)).items)

    const one = await api(`/api/audit?key_id=${pager.id}&limit=7`, { key: admin })
    expect([one.json.items.length, one.json.next_cursor]).toEqual([7, null])
  })

  it("cursor pagination with limit=2 over the whole log walks every row once, with no gaps", async () => {
    const snapshot = (await list()).items
    expect(snapshot.length).toBeGreaterThanOrEqual(10)
    const newestInSnapshot = Math.max(...snapshot.map((i) => Number(i.id)))

    const walked: Array<Entry> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res: HttpResult = await api(`/api/audit?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: admin })
      expect(res.status, res.text).toBe(200)
      walked.push(...res.json.items)
      cursor = res.json.next_cursor
      pages++
    } while (cursor !== null && pages < 500)
    expect(cursor).toBeNull()
    const ids = walked.map((i) => i.id)
    expect(new Set(ids).size, "duplicates in the walk").toBe(ids.length)
    // The walk started after the snapshot, so it holds every snapshot row plus a few newer ones.
    const walkedOld = walked.filter((i) => Number(i.id) <= newestInSnapshot).map((i) => i.id)
    expect(new Set(walkedOld)).toEqual(new Set(snapshot.map((i) => i.id)))
    expectStrictlyNewestFirst(walked)
  })

  it("a cursor that is not one the API returned is a 400 invalid_request", async () => {
    const garbage = [
      "garbage",
      "%%%",
      cursorOf(["abc"]),
      cursorOf([1]),
      cursorOf({ id: "1" }),
      cursorOf(["1", "2"]),
      cursorOf(["-1"]),
      "a".repeat(600)
    ]
    for (const cursor of garbage) {
      const res = await api(`/api/audit?cursor=${encodeURIComponent(cursor)}`, { key: admin })
      expect([res.status, res.json.code], cursor).toEqual([400, "invalid_request"])
    }
    // A well-formed position before the first row is just an empty page.
    const empty = await api(`/api/audit?cursor=${cursorOf(["1"])}`, { key: admin })
    expect([empty.status, empty.json.items, empty.json.next_cursor]).toEqual([200, [], null])
  })

  it("a cursor whose id does not fit a bigint is a 400, not a store outage", async () => {
    const res = await api(`/api/audit?cursor=${cursorOf(["9999999999999999999"])}`, { key: admin })
    expect([res.status, res.json.code]).toEqual([400, "invalid_request"])
  })

  it("limit outside 1..500 or not an integer is a 400 invalid_request", async () => {
    for (const limit of ["0", "501", "-1", "1.5", "ten"]) {
      const res = await api(`/api/audit?limit=${limit}`, { key: admin })
      expect([res.status, res.json.code], limit).toEqual([400, "invalid_request"])
      expect(res.json.message).toContain("limit")
    }
  })

  it("stats count the org's rows by outcome, per hour, per key and per block reason", async () => {
    const { rows } = await exportJson() // the export's own row is in it
    const stats = await api("/api/audit/stats", { key: admin })
    expect(stats.status).toBe(200)
    const s = stats.json
    const count = (f: (r: Entry) => boolean) => rows.filter(f).length
    expect(Math.abs(s.since - (Math.floor(Date.now() / 1000) - 24 * 3600))).toBeLessThan(30)
    expect(s.total).toBe(rows.length)
    expect(s.success).toBe(count((r) => r.outcome === "success"))
    expect(s.refused).toBe(count((r) => r.outcome === "refused"))
    expect(s.error).toBe(count((r) => r.outcome === "error"))
    expect(s.total).toBe(s.success + s.refused + s.error)
    const hourly = s.hourly as Array<{ hour: number; success: number; refused: number; error: number }>
    expect(hourly.reduce((n, h) => n + h.success + h.refused + h.error, 0)).toBe(s.total)
    for (const h of hourly) expect(h.hour % 3600).toBe(0)
    expect(s.top_keys).toContainEqual({
      key_id: reader.id,
      principal: `key:${reader.prefix}`,
      requests: count((r) => r.key_id === reader.id)
    })
    const requests = (s.top_keys as Array<{ requests: number }>).map((k) => k.requests)
    expect(requests).toEqual([...requests].sort((a, b) => b - a))
    // The keyless 401s count too: a one-org gateway attributes them to its org.
    const byReason = (list: Array<{ block_reason: string }>) => [...list].sort((a, b) => a.block_reason.localeCompare(b.block_reason))
    expect(byReason(s.block_reasons)).toEqual(
      byReason(
        ["insufficient_scope", "invalid_api_key", "unauthenticated"].map((reason) => ({ block_reason: reason, count: count((r) => r.block_reason === reason) }))
      )
    )

    const lastHour = await api("/api/audit/stats?hours=1", { key: admin })
    expect(lastHour.status).toBe(200)
    expect(Math.abs(lastHour.json.since - (Math.floor(Date.now() / 1000) - 3600))).toBeLessThan(30)
    for (const hours of ["0", "2161", "abc"]) {
      const bad = await api(`/api/audit/stats?hours=${hours}`, { key: admin })
      expect([bad.status, bad.json.code], hours).toEqual([400, "invalid_request"])
    }
  })

  it("export as JSON parses and holds exactly the listed rows (plus the list's and its own row)", async () => {
    const listed = await list()
    const { rows, res } = await exportJson()
    expect(res.headers["content-type"]).toContain("application/json")
    expect(res.headers["content-disposition"]).toBe('attachment; filename="sluice-audit.json"')
    expect(rows.length).toBe(listed.items.length + 2)
    const exported = new Map(rows.map((r) => [r.id, r]))
    for (const item of listed.items) expect(exported.get(item.id)).toEqual(item)
    const extra = rows.filter((r) => !listed.items.some((i) => i.id === r.id)).map((r) => r.request_id)
    expect(new Set(extra)).toEqual(new Set([listed.requestId, rid(res)]))
    for (const row of rows) expect(Object.keys(row).sort()).toEqual([...ENTRY_FIELDS].sort())

    const filtered = await exportJson(`key_id=${reader.id}&outcome=refused`)
    expect(filtered.rows.map((r) => r.request_id).sort()).toEqual(readerRefused.map((r) => r.requestId).sort())
  })

  it("export as CSV has the header line and neutralises formula cells injected through the user agent", async () => {
    const injected = new Map<string, string>()
    for (const ua of [INJECTION, '+1,"x"', "@SUM(1+1)", "-2+3"]) {
      const res = await api("/api/plan", { key: admin, headers: { "user-agent": ua } })
      expect(res.status).toBe(200)
      injected.set(rid(res), ua)
    }
    const { rows: json } = await exportJson()
    const res = await api("/api/audit/export?format=csv", { key: admin })
    expect(res.status).toBe(200)
    expect(res.headers["content-type"]).toBe("text/csv; charset=utf-8")
    expect(res.headers["content-disposition"]).toBe('attachment; filename="sluice-audit.csv"')
    expect(res.text.split("\r\n")[0]).toBe(CSV_HEADER)
    expect(res.text.endsWith("\r\n")).toBe(true)

    const [header, ...records] = parseCsv(res.text)
    expect(header).toEqual(ENTRY_FIELDS)
    for (const record of records) expect(record.length).toBe(ENTRY_FIELDS.length)
    const rows = records.map((r) => Object.fromEntries(ENTRY_FIELDS.map((f, i) => [f, r[i]!])))
    // The JSON export's rows, plus that export's own row and this one's.
    expect(rows.length).toBe(json.length + 1)
    const csvIds = new Set(rows.map((r) => r["id"]))
    for (const row of json) expect(csvIds.has(row.id)).toBe(true)

    for (const [requestId, ua] of injected) {
      const row = rows.find((r) => r["request_id"] === requestId)
      expect(row, ua).toBeDefined()
      expect(row!["user_agent"]).toBe(`'${ua}`)
    }
    expect(res.text).toContain(`,'${INJECTION},`)
    expect(res.text).toContain(`,"'+1,""x""",`)
    for (const record of records) {
      for (const cell of record) expect(/^[=+\-@\t\r]/.test(cell), cell).toBe(false)
    }
  })

  it("a read-only key gets 403 insufficient_scope on export, audited with that block_reason on the bare route", async () => {
    const refused = readerRefused.find((r) => r.route === "/api/audit/export")!
    expect(refused.res.status).toBe(403)
    expect(refused.res.json).toMatchObject({ code: "insufficient_scope", required_scope: "admin" })
    const again = await api("/api/audit/export?format=json", { key: reader.key })
    expect([again.status, again.json.code]).toEqual([403, "insufficient_scope"])

    const { items } = await list(`key_id=${reader.id}&outcome=refused`)
    const rows = items.filter((i) => i.route === "/api/audit/export")
    expect(rows.map((r) => r.request_id).sort()).toEqual([refused.requestId, rid(again)].sort())
    for (const row of rows) {
      expect(row).toMatchObject({ status: 403, outcome: "refused", block_reason: "insufficient_scope", method: "GET" })
    }
  })
})

describe("audit export capped by SP_MAX_EXPORT_ROWS", () => {
  let gateway: Gateway
  let admin: string
  beforeAll(async () => {
    gateway = await startApp({ env: { SP_MAX_EXPORT_ROWS: "5" } })
    admin = await localKey(gateway)
    for (let i = 0; i < 12; i++) expect((await request(gateway.url, "/api/plan", { key: admin })).status).toBe(200)
  })
  afterAll(() => gateway?.stop())

  it("caps both formats at 5 rows", async () => {
    const json = await request(gateway.url, "/api/audit/export?format=json", { key: admin })
    expect(json.status).toBe(200)
    expect(json.json.length).toBe(5)
    const csv = await request(gateway.url, "/api/audit/export?format=csv", { key: admin })
    expect(csv.status).toBe(200)
    const lines = csv.text.split("\r\n").filter((l) => l !== "")
    expect(lines[0]).toBe(CSV_HEADER)
    expect(lines.length).toBe(1 + 5)
    const all = await request(gateway.url, "/api/audit?limit=500", { key: admin })
    expect(all.json.items.length).toBeGreaterThan(10)
  })

  it("the capped export holds the 5 newest rows", async () => {
    const exported = await request(gateway.url, "/api/audit/export?format=json", { key: admin })
    const all = await request(gateway.url, "/api/audit?limit=500", { key: admin })
    const newest = [...(all.json.items as Array<Entry>)].sort(byId).slice(0, 5).map((i) => i.id)
    expect((exported.json as Array<Entry>).map((r) => r.id)).toEqual(newest)
  })
})
