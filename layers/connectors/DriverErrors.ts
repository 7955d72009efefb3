import type { Exit } from "effect"
import { ConnectorError, type FailureStep } from "./Connector"

const MAX_MESSAGE = 500

const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NONAME"])
const TCP_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE", "ECONNABORTED"])
const TLS_CODE = /^(ERR_TLS|ERR_SSL|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|HOSTNAME_MISMATCH|ERR_OSSL|EENCRYPT)/
// SQLSTATE classes and vendor codes (ClickHouse and Trino error names too) for refused logins, missing rights and cancelled statements.
const AUTH_STATES = new Set([
  "28P01", "28000", "3D000", "ER_ACCESS_DENIED_ERROR", "ER_DBACCESS_DENIED_ERROR", "ER_BAD_DB_ERROR",
  "AUTHENTICATION_FAILED", "UNKNOWN_USER", "WRONG_PASSWORD", "REQUIRED_PASSWORD", "UNKNOWN_DATABASE", "ELOGIN"
])
const PRIVILEGE_STATES = new Set(["42501", "ER_TABLEACCESS_DENIED_ERROR", "ER_COLUMNACCESS_DENIED_ERROR", "ACCESS_DENIED", "PERMISSION_DENIED"])
// The server ended the session under the statement (a DBA's kill, a restart or failover), or the driver lost it: the database's fault, not the statement's.
const SESSION_ENDED = new Set(["57P01", "57P02", "57P03", "ER_CONNECTION_KILLED", "ER_SERVER_SHUTDOWN", "PROTOCOL_CONNECTION_LOST"])
// A value the database could not compute: SQLSTATE class 22 (data exception), and the names engines without SQLSTATEs give it.
const DATA_STATE = /^22[0-9A-Z]{3}$/
const DATA_NAMES = new Set([
  "ER_DATA_OUT_OF_RANGE", "ER_TRUNCATED_WRONG_VALUE", "ER_DIVISION_BY_ZERO", "ER_INVALID_JSON_TEXT_IN_PARAM", "ER_WARN_DATA_OUT_OF_RANGE",
  "INVALID_CAST_ARGUMENT", "DIVISION_BY_ZERO", "NUMERIC_VALUE_OUT_OF_RANGE", "INVALID_FUNCTION_ARGUMENT", "CANNOT_PARSE_TEXT", "CANNOT_PARSE_NUMBER",
  "CANNOT_PARSE_DATE", "CANNOT_PARSE_DATETIME", "ILLEGAL_DIVISION", "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE", "CANNOT_CONVERT_TYPE"
])
// DuckDB names the kind of its error first; SQLite says what it could not read.
const DATA_MESSAGE = /^(Conversion Error|Out of Range Error|Invalid Input Error(?!: More than one row))|^(malformed JSON|integer overflow|JSON cannot hold BLOB values)/
const isDataError = (codes: ReadonlyArray<string>, message: string) => codes.some((c) => DATA_STATE.test(c) || DATA_NAMES.has(c)) || DATA_MESSAGE.test(message)

const TIMEOUT_STATES = new Set(["57014", "ER_QUERY_TIMEOUT", "ER_STATEMENT_TIMEOUT", "ER_QUERY_INTERRUPTED", "TIMEOUT_EXCEEDED", "EXCEEDED_TIME_LIMIT", "ETIMEOUT"])

const FIXED: Partial<Record<FailureStep, string>> = {
  dns: "The database host name does not resolve",
  tcp: "The database could not be reached over TCP (is it running, and are the host and port right?)",
  tls: "The TLS handshake with the database failed (check the TLS mode and certificates)",
  auth: "The database refused the login (check the username, password and database name)",
  timeout: "The statement was cancelled because it ran past its timeout"
}

// A session that was open and went away under the statement: the database was reached, so "could not be reached" would mislead.
const LOST_CODES = new Set([...SESSION_ENDED, "ECONNRESET", "EPIPE", "ECONNABORTED"])
const LOST = "The connection to the database was lost during the statement (the server ended the session, or the network reset it)"
const lostSession = (codes: ReadonlyArray<string>, message: string) =>
  codes.some((c) => LOST_CODES.has(c)) || /Connection terminated unexpectedly/i.test(message)

const stepOf = (codes: ReadonlyArray<string>, message: string, httpStatus: unknown): FailureStep => {
  const code = codes[0] ?? ""
  if (DNS_CODES.has(code)) return "dns"
  if (codes.some((c) => SESSION_ENDED.has(c))) return "tcp"
  if (TCP_CODES.has(code) || /timeout expired|connection timeout|Connection terminated unexpectedly|^Failed to connect to .+ in \d+ms$/i.test(message)) return "tcp"
  if (TLS_CODE.test(code) || /does not support SSL|SSL connection|self[- ]signed certificate|certificate/i.test(message)) return "tls"
  if (codes.some((c) => AUTH_STATES.has(c)) || httpStatus === 401) return "auth"
  if (codes.some((c) => PRIVILEGE_STATES.has(c))) return "privileges"
  if (codes.some((c) => TIMEOUT_STATES.has(c)) || /max_statement_time|maximum statement execution time/i.test(message)) return "timeout"
  return "query"
}

/** The codes of an error and of those it wraps (mssql's originalError around tedious' error around the socket's), innermost first. */
const wrappedCodes = (error: unknown, depth = 0): Array<unknown> => {
  const e = error as { code?: unknown; originalError?: unknown; cause?: unknown; errors?: unknown } | null
  if (e === null || typeof e !== "object" || depth > 4) return []
  const inner = e.originalError ?? e.cause ?? (Array.isArray(e.errors) ? e.errors[0] : undefined)
  return [...wrappedCodes(inner, depth + 1), e.code]
}

/** A refusal raised under a driver (the egress lookup of an HTTP agent), however deep the driver wrapped it. */
const refusalIn = (error: unknown, depth = 0): ConnectorError | null => {
  if (error instanceof ConnectorError) return error
  const e = error as { originalError?: unknown; cause?: unknown; errors?: unknown } | null
  if (e === null || typeof e !== "object" || depth > 4) return null
  return refusalIn(e.originalError ?? e.cause ?? (Array.isArray(e.errors) ? e.errors[0] : undefined), depth + 1)
}

/**
 * A driver's error as a ConnectorError. Connection-level failures get fixed wording (driver text there
 * names hosts and users); a statement's own error keeps the database's message, scrubbed of secrets.
 */
export const fromDriverError = (error: unknown, scrub: (message: string) => string, during: "connect" | "query"): ConnectorError => {
  const refusal = refusalIn(error)
  if (refusal !== null) return refusal
  const raw = error as { code?: unknown; type?: unknown; errorName?: unknown; sqlState?: unknown; response?: { status?: unknown }; message?: unknown } | null
  // ClickHouse names its error in `type` and Trino in `errorName`, MySQL's driver gives the SQLSTATE in `sqlState`; an HTTP driver's refusal carries the response status.
  const codes = [...wrappedCodes(error), raw?.type, raw?.errorName, raw?.sqlState].filter((c): c is string => typeof c === "string")
  const message = typeof raw?.message === "string" ? raw.message : String(error)
  const step = stepOf(codes, message, raw?.response?.status)
  const fixed = step === "tcp" && during === "query" && lostSession(codes, message) ? LOST : FIXED[step]
  if (fixed !== undefined) return new ConnectorError({ step, message: fixed })
  if (during === "connect" && step === "query") return new ConnectorError({ step: "auth", message: `Connecting failed: ${scrub(message).slice(0, MAX_MESSAGE)}` })
  return new ConnectorError({ step, message: scrub(message).slice(0, MAX_MESSAGE), ...(step === "query" && isDataError(codes, message) ? { data: true } : {}) })
}

export const statementTimedOut = () => new ConnectorError({ step: "timeout", message: FIXED.timeout! })

/** Whether a session can go back to its pool: yes after a success or a statement the database refused; not after an interrupt, timeout or socket error. */
export const sessionReusable = (exit: Exit.Exit<unknown, ConnectorError>) =>
  exit._tag === "Success" || (exit.cause._tag === "Fail" && reusableAfter(exit.cause.error))

/** Whether a session can go back to its pool after this failure: the database refused the statement, and the session is fine. */
export const reusableAfter = (error: ConnectorError) => error.step === "query" || error.step === "privileges"

/** Replaces each secret (and its URL-encoded form) with ***. */
export const makeScrubber = (secrets: ReadonlyArray<string>) => {
  const needles = [...new Set(secrets.flatMap((s) => (s.length >= 3 ? [s, encodeURIComponent(s)] : [])))].sort((a, b) => b.length - a.length)
  return (message: string) => needles.reduce((text, needle) => text.split(needle).join("***"), message)
}
