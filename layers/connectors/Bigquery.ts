import { createPrivateKey, randomUUID } from "node:crypto"
import * as https from "node:https"
import {
  BigQuery,
  BigQueryDate,
  BigQueryDatetime,
  BigQueryTime,
  BigQueryTimestamp,
  common,
  Geography,
  type Job,
  type Query,
  type QueryResultsOptions
} from "@google-cloud/bigquery"
import { Effect, Either, Schema, type Scope } from "effect"
import type { BigqueryInput } from "../../src/domain/Connection"
import { attributedSql, type Column, type Connector, ConnectorError, type ConnectorPool, type Endpoint, type OpenRequest, type QueryOptions, type QueryResult, RowCollector } from "./Connector"
import { fromDriverError, makeScrubber, statementTimedOut } from "./DriverErrors"
import { allowAnyTarget, checkedAgent, watchRefusals } from "./EgressPolicy"

type BigqueryConnection = typeof BigqueryInput.Type

const DEFAULT_ENDPOINT = "https://bigquery.googleapis.com"
const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"
// A pool here bounds concurrent jobs; the HTTPS sockets belong to the connection's keep-alive agent.
const MAX_JOBS = 4
// As the library's own transport: a minute per request, three retries of a rate limit or server error (job inserts carry their id).
const API_REQUEST = {
  timeout: 60_000,
  retry: true,
  retryConfig: { retry: 3, httpMethodsToRetry: ["GET", "POST", "PUT", "PATCH", "DELETE"] }
}
const PAGE_ROWS = 10_000
const CANCEL_WAIT = "5 seconds"
const LABELS = { client: "sluice" }

// Only a service-account key: other credential types make the auth library read files, run commands or call URLs.
const ServiceAccountKey = Schema.parseJson(
  Schema.Struct({
    type: Schema.Literal("service_account"),
    client_email: Schema.String,
    private_key: Schema.String,
    private_key_id: Schema.optional(Schema.String),
    token_uri: Schema.optional(Schema.String.pipe(Schema.startsWith("https://")))
  })
)

const configError = (message: string) => new ConnectorError({ step: "config", message })

interface GaxiosResponse {
  readonly status: number
  readonly statusText: string
  readonly headers: Headers
  readonly data: unknown
}

/** A gaxios response in the terms of the `request` module, which the library's response handling reads. */
const asRequestResponse = (response: GaxiosResponse) => ({
  statusCode: response.status,
  statusMessage: response.statusText,
  headers: Object.fromEntries(response.headers),
  body: response.data
})

const endpointOf = (url: URL): Endpoint => ({ host: url.hostname.replace(/^\[|\]$/g, ""), port: url.port === "" ? 443 : Number(url.port) })

const address = (c: BigqueryConnection): Endpoint => endpointOf(new URL(c.api_endpoint ?? DEFAULT_ENDPOINT))

const apiEndpoint = (c: BigqueryConnection, endpoint: Endpoint | null) => {
  const url = new URL(c.api_endpoint ?? DEFAULT_ENDPOINT)
  if (endpoint !== null) {
    url.hostname = endpoint.host.includes(":") ? `[${endpoint.host}]` : endpoint.host
    url.port = String(endpoint.port)
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`
}

/** The status of a redirect answered to a request (gaxios names it `status`, the library's ApiError `code`), or null. */
const redirectStatus = (error: unknown): number | null => {
  const e = error as { status?: unknown; code?: unknown } | null
  const status = e === null || typeof e !== "object" ? undefined : (e.status ?? e.code)
  return typeof status === "number" && status >= 300 && status < 400 ? status : null
}

/** Google's errors in the shared classifier's terms: a grant the token endpoint refuses is a 401, a 403 accessDenied a missing right. */
const classified = (error: unknown): unknown => {
  const e = error as { code?: unknown; errors?: Array<{ reason?: unknown }>; response?: { data?: { error?: unknown } }; message?: unknown } | null
  if (e === null || typeof e !== "object") return error
  if (e.code === 401 || typeof e.response?.data?.error === "string") return { response: { status: 401 }, message: e.message }
  if (e.code === 403 && e.errors?.some((x) => x.reason === "accessDenied")) return { code: "PERMISSION_DENIED", message: e.message }
  return error
}

// INT64 stays a number while exact, and becomes a string beyond 2^53 as PostgreSQL's int8 does.
const INTEGERS = {
  integerTypeCastFunction: (value: string) => (Number.isSafeInteger(Number(value)) ? Number(value) : value)
}

/** The driver's typed values as JSON: dates and times as BigQuery writes them, NUMERIC as exact text, BYTES as base64. */
const plain = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") return value
  if (Array.isArray(value)) return value.map(plain)
  if (Buffer.isBuffer(value)) return value.toString("base64")
  if (
    value instanceof BigQueryTimestamp || value instanceof BigQueryDate || value instanceof BigQueryDatetime ||
    value instanceof BigQueryTime || value instanceof Geography
  ) return value.value
  if (Object.getPrototypeOf(value) === Object.prototype) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
  const fixed = (value as { toFixed?: () => string }).toFixed
  return typeof fixed === "function" ? fixed.call(value) : String(value)
}

const open = (request: OpenRequest<BigqueryConnection>): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = request.connection
    const key = yield* Schema.decodeUnknownEither(ServiceAccountKey)(c.credentials_json ?? "").pipe(
      Either.mapLeft(() =>
        configError("credentials_json must be a service-account key (JSON with type service_account, client_email, private_key, and an https token_uri if any)")
      )
    )
    yield* Effect.try({ try: () => createPrivateKey(key.private_key), catch: () => configError("credentials_json: private_key is not a PEM private key") })
    // The token endpoint is a host the pool's own check never saw: checked now. Every socket, to it or to the API, is checked again as it opens.
    const tokenUrl = new URL(key.token_uri ?? GOOGLE_TOKEN_URL)
    const egress = request.egress ?? allowAnyTarget
    yield* egress.check(endpointOf(tokenUrl))
    const refusals = watchRefusals(egress)
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() => checkedAgent(refusals.policy, new https.Agent({ keepAlive: true }))),
      (agent) => Effect.sync(() => agent.destroy())
    )
    const scrub = (message: string) => makeScrubber([key.private_key])(request.scrub(message))
    const failure = (error: unknown, during: "connect" | "query") => {
      const redirect = redirectStatus(error)
      if (redirect !== null) return configError(`Google answered with a redirect (HTTP ${redirect}), which this gateway does not follow`)
      const e = fromDriverError(classified(error), scrub, during)
      return e.step === "auth" ? new ConnectorError({ step: "auth", message: "Google refused the service-account key (check credentials_json and that the account is enabled)" }) : e
    }
    // A refused socket fails the calls under way with the refusal, not after the auth library's retries.
    const call = <A>(during: "connect" | "query", run: () => Promise<A>) => refusals.guard(Effect.tryPromise({ try: run, catch: (error) => failure(error, during) }))

    const submitted = new Map<string, Promise<unknown>>()
    /** Cancels a job on the server once its insert has settled, so the cancel cannot overtake the insert. */
    const cancel = (jobId: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const insert = submitted.get(jobId)
        if (insert === undefined) return Effect.void
        return Effect.promise(() => insert.then(() => bigquery.job(jobId, c.location !== undefined ? { location: c.location } : {}).cancel(), () => undefined)).pipe(
          Effect.timeout(CANCEL_WAIT),
          Effect.ignore
        )
      })

    // Only the signing fields: a universe_domain or other extras would change how the library authenticates.
    const credentials = { client_email: key.client_email, private_key: key.private_key, ...(key.private_key_id ? { private_key_id: key.private_key_id } : {}) }
    // The client's sockets are the agent's, destroyed with the pool; closing cancels the jobs still running.
    const bigquery = yield* Effect.acquireRelease(
      Effect.sync(
        () =>
          new BigQuery({
            projectId: c.project,
            apiEndpoint: apiEndpoint(c, request.endpoint),
            credentials,
            ...(c.location !== undefined ? { location: c.location } : {})
          })
      ),
      () => Effect.forEach([...submitted.keys()], cancel, { concurrency: "unbounded", discard: true })
    )
    // Google's Python and Go libraries post the key's grant to its token_uri; the Node one always posts to oauth2.googleapis.com.
    // The signer's requests use the checked agent and follow no redirect, so each reaches only the host checked for it.
    const signer = yield* call("connect", () => bigquery.authClient.getClient())
    signer.transporter.interceptors.request.add({
      resolved: async (config) => ({ ...config, ...(config.url.href === GOOGLE_TOKEN_URL ? { url: tokenUrl } : {}), agent, redirect: "manual" })
    })
    // The library sends its API requests through teeny-request, whose agent is shared by the whole process and which follows
    // redirects: they are authorized as before, then sent through the signer's transporter, with its checked agent, instead.
    const authenticate = bigquery.makeAuthenticatedRequest
    const handled = (response: GaxiosResponse, respond: common.BodyResponseCallback) =>
      common.util.handleResp(null, asRequestResponse(response) as never, response.data as common.ResponseBody, respond)
    const send = (reqOpts: common.DecorateRequestOptions, respond: common.BodyResponseCallback) =>
      authenticate(reqOpts, {
        onAuthenticated: (error, authorized) => {
          if (error !== null || authorized === undefined) return respond(error)
          signer.transporter
            .request({ url: authorized.uri, method: authorized.method ?? "GET", params: authorized.qs, data: authorized.json, headers: authorized.headers ?? {}, ...API_REQUEST })
            .then(
              (response) => handled(response, respond),
              (failed: Error & { response?: GaxiosResponse }) => (failed.response === undefined ? respond(failed) : handled(failed.response, respond))
            )
        }
      })
    bigquery.makeAuthenticatedRequest = Object.assign((reqOpts: common.DecorateRequestOptions, respond?: unknown) => {
      // Only callbacks here: the connector reads no result as a stream.
      if (typeof respond !== "function") throw new Error("The BigQuery connector sends no streamed request")
      send(reqOpts, respond as common.BodyResponseCallback)
    }, authenticate) as typeof authenticate

    const permits = yield* Effect.makeSemaphore(MAX_JOBS)
    let admitted = 0

    const base = (text: string): Query => ({
      query: text,
      useLegacySql: false,
      labels: LABELS,
      ...(c.dataset !== undefined ? { defaultDataset: { projectId: c.project, datasetId: c.dataset } } : {}),
      ...(c.location !== undefined ? { location: c.location } : {})
    })

    const estimate = (query: Query) =>
      Effect.map(call("query", () => bigquery.createQueryJob({ ...query, dryRun: true })), ([, metadata]) => ({
        statementType: String(metadata?.statistics?.query?.statementType ?? "UNKNOWN"),
        bytesProcessed: Number(metadata?.statistics?.totalBytesProcessed ?? 0)
      }))

    /** The most a job may bill: the connection's maximum_bytes_billed, lowered for one statement by its caller's budget. */
    const billable = (options: QueryOptions) =>
      [c.maximum_bytes_billed, options.maxBytesBilled].filter((n): n is number => n !== undefined).reduce<number | undefined>((a, b) => (a === undefined ? b : Math.min(a, b)), undefined)

    /** Dry run first: only a SELECT within the byte cap becomes a job. */
    const dryRun = (query: Query, options: QueryOptions) =>
      Effect.gen(function* () {
        const { statementType, bytesProcessed: bytes } = yield* estimate(query)
        if (statementType !== "SELECT") {
          return yield* new ConnectorError({ step: "query", message: `Only SELECT statements run here; BigQuery reports this statement as ${statementType}` })
        }
        const cap = billable(options)
        if (cap !== undefined && bytes > cap) {
          return yield* new ConnectorError({ step: "query", message: `The statement would process ${bytes} bytes, above the ${cap} bytes it may bill (maximum_bytes_billed)` })
        }
      })

    const readRows = (job: Job, options: QueryOptions) =>
      Effect.gen(function* () {
        let columns: ReadonlyArray<Column> = []
        let bytesScanned = 0
        const rows = new RowCollector(options)
        let page: QueryResultsOptions | null = { maxResults: Math.min(rows.room, PAGE_ROWS), autoPaginate: false, wrapIntegers: INTEGERS }
        while (page !== null && rows.room > 0) {
          const current: QueryResultsOptions = page
          const [pageRows, next, response] = yield* call("query", () => job.getQueryResults(current))
          // Until the job ends the server holds each call for a while and answers jobComplete: false.
          if (response?.jobComplete === false) continue
          const fields = response?.schema?.fields ?? []
          bytesScanned = Number(response?.totalBytesProcessed ?? bytesScanned)
          columns = fields.map((f) => ({ name: f.name ?? "", type: (f.mode === "REPEATED" ? `array<${f.type}>` : f.type ?? "").toLowerCase() }))
          for (const row of pageRows as Array<Record<string, unknown>>) if (!rows.add(fields.map((f) => plain(row[f.name ?? ""])))) break
          page = next === null || next === undefined ? null : { ...next, maxResults: Math.min(rows.room, PAGE_ROWS) }
        }
        return { ...rows.result(columns), bytesScanned } satisfies QueryResult
      })

    const run = (sql: string, options: QueryOptions) =>
      Effect.suspend(() => {
        const jobId = `sluice_${randomUUID().replaceAll("-", "_")}`
        const query = base(attributedSql(sql, options))
        return Effect.gen(function* () {
          yield* dryRun(query, options)
          const cap = billable(options)
          const insert = bigquery.createQueryJob({
            ...query,
            jobId,
            jobTimeoutMs: Math.max(1, Math.floor(options.timeoutMs)),
            ...(cap !== undefined ? { maximumBytesBilled: String(cap) } : {})
          })
          submitted.set(jobId, insert)
          const [job] = yield* call("query", () => insert)
          return yield* readRows(job, options)
        }).pipe(
          Effect.onInterrupt(() => cancel(jobId)),
          Effect.ensuring(Effect.sync(() => submitted.delete(jobId))),
          Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: statementTimedOut })
        )
      })

    const query = (sql: string, options: QueryOptions) =>
      Effect.acquireUseRelease(
        Effect.sync(() => admitted++),
        () => permits.withPermits(1)(run(sql, options)),
        () => Effect.sync(() => admitted--)
      )

    // A dry run costs nothing and proves the key, the project and the right to create jobs.
    const ping = call("connect", () => bigquery.createQueryJob({ ...base("select 1"), dryRun: true })).pipe(
      Effect.timeoutFail({
        duration: request.connectTimeoutMs,
        onTimeout: () => new ConnectorError({ step: "timeout", message: "BigQuery did not answer within the connection timeout" })
      }),
      Effect.asVoid
    )

    return {
      query,
      ping,
      dryRun: (sql: string) => estimate(base(sql)),
      stats: () => ({ total: MAX_JOBS, idle: MAX_JOBS - Math.min(admitted, MAX_JOBS), waiting: Math.max(0, admitted - MAX_JOBS) })
    } satisfies ConnectorPool
  })

export const BigqueryConnector: Connector<BigqueryConnection> = {
  capabilities: {
    db_type: "bigquery",
    driver: "@google-cloud/bigquery",
    transport: "BigQuery REST API over HTTPS",
    read_only_guard: "dry run first: only statementType SELECT within maximum_bytes_billed runs; jobs carry maximumBytesBilled and jobTimeoutMs",
    server_side_cancel: true,
    ssh_tunnel: false,
    tls: true,
    local_file: false,
    limit_syntax: "limit",
    verified_against: "protocol fake in test/fakes (no live BigQuery)"
  },
  address,
  alwaysTls: () => true,
  privilegesProbe: "select count(*) as readable_tables from INFORMATION_SCHEMA.TABLES",
  open
}
