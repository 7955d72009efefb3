import { randomBytes, randomInt, randomUUID } from "node:crypto"
import type * as net from "node:net"
import { Effect, Exit, Runtime, Scope } from "effect"
import { loadModule as loadPgQuery } from "libpg-query"
import { fromNodeSocket } from "pg-gateway/node"
import { AppConfig } from "../../layers/AppConfig"
import { ConnectorPools } from "../../layers/connectors/ConnectorPools"
import { Unavailable } from "../domain/Errors"
import { LOCAL_ORG, type OrgId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { classifyDbtSql, DBT_STATEMENT_MAX_BYTES, READS_AS_CLASSIFIED } from "../governance/sqlguard/DbtStatements"
import { Audit } from "../services/Audit"
import { auditRow, newAuditDraft } from "../services/AuditDraft"
import { DbBranches } from "../services/DbBranches"
import { DbtRunTokens, type RunClaims } from "../services/DbtRunTokens"

const CANCEL_REQUEST = 80877102
// Before a session is authenticated: PostgreSQL's own cap on a startup packet, all it may send, how long it may take, how many may wait.
const MAX_STARTUP_BYTES = 10_000
const MAX_UNAUTHENTICATED_BYTES = 64 * 1024
const LOGIN_TIMEOUT_MS = 10_000
const MAX_UNAUTHENTICATED = 64
// A frame of the protocol beyond this (COPY data included) ends the session: nothing legitimate sends one.
const MAX_FRAME_BYTES = 16 * 1024 * 1024
const MAX_SESSIONS_PER_ORG = 32
// One credential cannot take all of its organization's sessions.
const MAX_SESSIONS_PER_CREDENTIAL = 8
// How often an open session checks that the credential behind its token still holds dbt_proxy.
const RECHECK_MS = 30_000
// A session's audit rows are written together at most this far apart, or at once when this many wait.
const AUDIT_EVERY_MS = 20
const AUDIT_AT_MOST_HELD = 200
const E = 0x45
const S = 0x53
// Our refusals' errors are small: a bigger error frame is passed on as it comes, never held.
const MAX_HELD_ERROR_BYTES = 64 * 1024
// A client's messages held back while the server answers the one before, at most: then its socket pauses.
const MAX_WAITING_BYTES = 4 * 1024 * 1024
// While the server takes COPY data: the data, its end, and the Flush or Sync it ignores meanwhile (a Sync after the end is its own).
const COPY_MESSAGES = new Set([0x64 /* CopyData */, 0x63 /* CopyDone */, 0x66 /* CopyFail */, 0x48 /* Flush */, 0x53 /* Sync */])
// The messages of an extended-protocol batch, which a Sync ends.
const EXTENDED = new Set([0x50 /* Parse */, 0x42 /* Bind */, 0x44 /* Describe */, 0x45 /* Execute */, 0x43 /* Close */])
const utf8 = new TextDecoder("utf-8", { fatal: true })
/** The text of a statement, or null where it is not UTF-8 (which the server, reading UTF-8, would not take either). */
const textOf = (bytes: Buffer) => {
  try {
    return utf8.decode(bytes)
  } catch {
    return null
  }
}

const cstring = (text: string) => Buffer.concat([Buffer.from(text, "utf8"), Buffer.alloc(1)])
const frame = (type: string, body: Buffer) => {
  const out = Buffer.allocUnsafe(5 + body.length)
  out.write(type, 0, "latin1")
  out.writeInt32BE(body.length + 4, 1)
  body.copy(out, 5)
  return out
}
const errorFrame = (severity: "ERROR" | "FATAL", code: string, message: string) =>
  frame("E", Buffer.concat([Buffer.from("S"), cstring(severity), Buffer.from("V"), cstring(severity), Buffer.from("C"), cstring(code), Buffer.from("M"), cstring(message), Buffer.alloc(1)]))
const parameterStatus = (name: string, value: string) => frame("S", Buffer.concat([cstring(name), cstring(value)]))
const backendKeyData = (pid: number, secret: number) => {
  const body = Buffer.allocUnsafe(8)
  body.writeInt32BE(pid, 0)
  body.writeInt32BE(secret, 4)
  return frame("K", body)
}

/** A C string of `message` from `at`: its text (null unless UTF-8) and where the next field starts; null where it has no end. */
const readCString = (message: Buffer, at: number) => {
  const end = message.indexOf(0, at)
  return end === -1 ? null : { text: textOf(message.subarray(at, end)), next: end + 1 }
}

/**
 * The dbt proxy: a PostgreSQL-protocol endpoint (SP_DBT_PROXY_PORT) dbt and psql connect to with a
 * run token as the password (pg-gateway answers the startup and the password check), joined to a
 * session on the token's branch as the branch's own role — never the connection's credentials, never
 * a superuser. Every statement of a simple query and every Parse is classified with PostgreSQL's
 * parser first: dbt's DDL and DML in the branch go on; the rest is swapped for a statement that fails
 * upstream, whose error the client sees as the refusal (in order, as PostgreSQL would answer). One
 * audit row per statement; CancelRequest cancels the upstream statement.
 */
export const makeDbtProxy = Effect.gen(function* () {
  const tokens = yield* DbtRunTokens
  const branches = yield* DbBranches
  const pools = yield* ConnectorPools
  const audit = yield* Audit
  const config = yield* AppConfig
  const runtime = yield* Effect.runtime<never>()
  const runPromise = Runtime.runPromise(runtime)
  const runFork = Runtime.runFork(runtime)
  yield* Effect.promise(() => loadPgQuery())
  const cancels = new Map<string, Effect.Effect<void>>()
  const perOrg = new Map<string, number>()
  const perCredential = new Map<string, number>()

  interface ProxyRow {
    readonly event: string
    readonly sql?: string
    readonly kind?: string
    readonly outcome: "success" | "refused"
    readonly reason?: string | null
  }
  /** One audit row of the proxy's: a connection's start or refusal, or a statement. */
  const rowOf = (principal: Principal | null, attributed: OrgId | null, claims: RunClaims | null, client: string | null, row: ProxyRow) => {
    const draft = newAuditDraft(randomUUID(), row.event, principal, principal?.orgId ?? attributed ?? (config.selfHosted ? LOCAL_ORG : null))
    draft.connection = claims?.conn ?? null
    draft.sql = row.sql ?? null
    draft.details = claims === null ? null : { run_id: claims.run, project: claims.project, branch: claims.branch, ...(row.kind === undefined ? {} : { statement: row.kind }), ...(row.reason ? { reason: row.reason } : {}) }
    return auditRow(draft, { route: "dbt-proxy", method: "SQL", durationMs: 0, outcome: row.outcome, blockReason: row.outcome === "refused" ? "statement_refused" : null, clientIp: client })
  }
  const record = (principal: Principal | null, attributed: OrgId | null, claims: RunClaims | null, client: string | null, row: ProxyRow) =>
    audit.record("postgresql", rowOf(principal, attributed, claims, client, row))

  let unauthenticated = 0

  /**
   * A new connection: a CancelRequest is answered here; anything else goes to the login, which must
   * finish within LOGIN_TIMEOUT_MS and MAX_UNAUTHENTICATED_BYTES (a client that has not logged in
   * holds no more of the gateway than that).
   */
  const accept = (socket: net.Socket) => {
    socket.setNoDelay(true)
    socket.on("error", () => socket.destroy())
    if (unauthenticated >= MAX_UNAUTHENTICATED) return socket.destroy()
    unauthenticated++
    let waiting = true
    const loggedIn = () => {
      if (!waiting) return
      waiting = false
      unauthenticated--
      clearTimeout(deadline)
      socket.off("data", countBytes)
    }
    const deadline = setTimeout(() => socket.destroy(), LOGIN_TIMEOUT_MS)
    socket.once("close", loggedIn)
    let received = 0
    const countBytes = (chunk: Buffer) => {
      received += chunk.length
      if (received > MAX_UNAUTHENTICATED_BYTES) socket.destroy()
    }
    socket.on("data", countBytes)
    let first = Buffer.alloc(0)
    const onFirst = (chunk: Buffer) => {
      first = Buffer.concat([first, chunk])
      if (first.length < 8) return
      socket.off("data", onFirst)
      socket.pause()
      const length = first.readInt32BE(0)
      if (length < 8 || length > MAX_STARTUP_BYTES) return socket.destroy()
      if (length === 16 && first.readInt32BE(4) === CANCEL_REQUEST) {
        if (first.length >= 16) runFork(Effect.ignore(cancels.get(`${first.readInt32BE(8)}:${first.readInt32BE(12)}`) ?? Effect.void))
        return socket.destroy()
      }
      socket.unshift(first)
      void serve(socket, loggedIn)
    }
    socket.on("data", onFirst)
  }

  const serve = async (socket: net.Socket, loggedIn: () => void) => {
    const client = socket.remoteAddress ?? null
    let verified: { claims: RunClaims; principal: Principal } | undefined
    let authenticated: () => void = () => undefined
    const authenticatedNow = new Promise<void>((resolve) => (authenticated = resolve))
    const connection = await fromNodeSocket(socket, {
      auth: {
        method: "password",
        getClearTextPassword: () => "",
        validateCredentials: async ({ password }) => {
          const result = await runPromise(Effect.either(tokens.verify(password)))
          if (result._tag === "Right") {
            verified = result.right
            return true
          }
          const claims = result.left.claims
          await runPromise(Effect.ignore(record(null, claims?.org ?? null, claims, client, { event: "dbt_proxy_connect", outcome: "refused", reason: result.left.why })))
          return false
        }
      },
      onAuthenticated: async () => {
        await connection.detach()
        authenticated()
      }
    })
    // A client that leaves (or is cut off) before it has logged in ends here too.
    socket.once("close", authenticated)
    await authenticatedNow
    if (verified === undefined || socket.destroyed) return socket.destroy()
    loggedIn()
    const duplex = connection.duplex
    // pg-gateway lets go of both sides once its message loop sees it is detached (a few turns of the event loop).
    for (let turns = 0; duplex.readable.locked || duplex.writable.locked; turns++) {
      if (turns > 1_000) return socket.destroy()
      await new Promise((resolve) => setImmediate(resolve))
    }
    // From here the gateway writes to the client's socket itself: pg-gateway has let go of it, and a web stream's writer costs a promise per write.
    const toClient = (bytes: Buffer | Uint8Array) => {
      if (!socket.destroyed) socket.write(bytes)
    }
    let ended = false
    const fatal = (code: string, message: string) => {
      ended = true
      socket.end(errorFrame("FATAL", code, message))
    }
    const { claims, principal } = verified
    const open = perOrg.get(claims.org) ?? 0
    if (open >= MAX_SESSIONS_PER_ORG) return fatal("53300", `Sluice: an organization has at most ${MAX_SESSIONS_PER_ORG} dbt proxy sessions open at once`)
    const credential = `${claims.org}:${claims.key ?? claims.user}`
    const mine = perCredential.get(credential) ?? 0
    if (mine >= MAX_SESSIONS_PER_CREDENTIAL) return fatal("53300", `Sluice: a credential has at most ${MAX_SESSIONS_PER_CREDENTIAL} dbt proxy sessions open at once`)
    perOrg.set(claims.org, open + 1)
    perCredential.set(credential, mine + 1)
    const scope = await runPromise(Scope.make())
    const closed = () => {
      perOrg.set(claims.org, (perOrg.get(claims.org) ?? 1) - 1)
      perCredential.set(credential, (perCredential.get(credential) ?? 1) - 1)
      void runPromise(Scope.close(scope, Exit.void))
    }
    socket.once("close", closed)
    const opened = await runPromise(
      Effect.either(
        Effect.gen(function* () {
          const { branch, branchTarget, password } = yield* branches.upstreamOf(claims.org, claims.conn, claims.project, claims.branch)
          if (branch.id !== claims.bid) return yield* new Unavailable({ message: "the run token was minted for an earlier branch of that name" })
          const session = yield* pools.postgresSession(branchTarget, { database: branch.database, user: branch.owner_role, password, settings: READS_AS_CLASSIFIED })
          return { branch, session }
        }).pipe(Scope.extend(scope))
      )
    )
    if (opened._tag === "Left") {
      await runPromise(Effect.ignore(record(principal, null, claims, client, { event: "dbt_proxy_connect", outcome: "refused", reason: "branch_unavailable" })))
      return fatal("08006", `Sluice: the branch ${claims.branch} could not be reached: ${opened.left.message}`)
    }
    const { branch, session } = opened.right
    await runPromise(Effect.ignore(record(principal, null, claims, client, { event: "dbt_proxy_connect", outcome: "success" })))

    const upstream = session.takeSocket()
    upstream.setNoDelay(true)
    upstream.on("close", () => socket.end())
    socket.on("close", () => upstream.destroy())

    const pid = randomInt(1, 2 ** 31 - 1)
    const secret = randomInt(-(2 ** 31), 2 ** 31 - 1)
    const cancelKey = `${pid}:${secret}`
    cancels.set(cancelKey, session.cancel)
    socket.once("close", () => cancels.delete(cancelKey))
    const hello = [...session.parameters].map(([name, value]) => parameterStatus(name, value))
    toClient(Buffer.concat([...hello, backendKeyData(pid, secret), frame("Z", Buffer.from("I"))]))

    // A refused statement is sent on as a call of a function no database has; its error comes back as the refusal.
    const nonce = randomBytes(8).toString("hex")
    const refusals = new Map<string, string>()
    let refusalCount = 0
    const refuse = (reason: string) => {
      const marker = `sluice_refused_${nonce}_${++refusalCount}`
      refusals.set(marker, reason)
      return `select ${marker}()`
    }
    // A chunk's statements are audited once it has gone upstream, and a session's rows go to the audit writer together, at most
    // AUDIT_EVERY_MS apart (at once when the session ends or many wait): an INSERT per statement competed with the statements
    // themselves for the servers. A row that cannot be written ends the session.
    let unaudited: Array<ProxyRow> = []
    let auditDue: NodeJS.Timeout | undefined
    const audited = (sql: string, kind: string, outcome: "success" | "refused", reason: string | null = null) => {
      unaudited.push({ event: "dbt_proxy", sql, kind, outcome, reason })
    }
    const writeAudit = () => {
      clearTimeout(auditDue)
      auditDue = undefined
      if (unaudited.length === 0) return
      const rows = unaudited.map((row) => rowOf(principal, null, claims, client, row))
      unaudited = []
      audit.append("postgresql", rows, (exit) => {
        if (Exit.isFailure(exit) && !ended) fatal("58000", "Sluice: the audit log cannot be written; the session ends")
      })
    }
    const flushAudit = () => {
      if (unaudited.length >= AUDIT_AT_MOST_HELD) return writeAudit()
      if (unaudited.length > 0) auditDue ??= setTimeout(writeAudit, AUDIT_EVERY_MS)
    }
    socket.once("close", writeAudit)

    /** The message as it goes upstream: as sent, or its statement swapped for a refusal; null ends the session. */
    const fromClient = (message: Buffer): Buffer | null => {
      const type = message[0]!
      if (type === 0x51 /* Query */) {
        if (message.length - 6 > DBT_STATEMENT_MAX_BYTES) {
          audited(message.subarray(5, 5 + 4096).toString("utf8"), "OVERSIZED", "refused", "too large")
          return frame("Q", cstring(refuse(`statements through the dbt proxy are at most ${DBT_STATEMENT_MAX_BYTES} bytes`)))
        }
        const sql = textOf(message.subarray(5, message.length - 1))
        if (sql === null) return frame("Q", cstring(refuse("statement text through the dbt proxy is UTF-8")))
        const verdict = classifyDbtSql(sql, branch.database)
        if (!verdict.allowed) {
          audited(sql, "REFUSED", "refused", verdict.reason)
          return frame("Q", cstring(refuse(verdict.reason)))
        }
        for (const statement of verdict.statements) audited(statement.sql, statement.kind, "success")
        return message
      }
      if (type === 0x50 /* Parse */) {
        const name = readCString(message, 5)
        const query = name === null ? null : readCString(message, name.next)
        if (name === null || query === null || name.text === null) return null
        const verdict =
          query.text === null
            ? { allowed: false as const, reason: "statement text through the dbt proxy is UTF-8" }
            : message.length - 6 > DBT_STATEMENT_MAX_BYTES
              ? { allowed: false as const, reason: `statements through the dbt proxy are at most ${DBT_STATEMENT_MAX_BYTES} bytes` }
              : classifyDbtSql(query.text, branch.database)
        if (!verdict.allowed) {
          audited((query.text ?? "").slice(0, 4096), "REFUSED", "refused", verdict.reason)
          return frame("P", Buffer.concat([cstring(name.text), cstring(refuse(verdict.reason)), Buffer.alloc(2)]))
        }
        for (const statement of verdict.statements) audited(statement.sql, statement.kind, "success")
        return message
      }
      // A fast-path function call names a function by its number: nothing to classify, so nothing passes.
      if (type === 0x46 /* FunctionCall */) return null
      return message
    }

    // The server reads a message's statement text when the message arrives, under the settings then in force, which the statements
    // before it may have changed (UPDATE of a view over pg_settings, a function of the copy's). A change is told only as a
    // ParameterStatus before ReadyForQuery, which ends the session. So a message that ends a batch (Query, Sync) goes up alone and
    // what follows it waits for every ReadyForQuery the server owes (a COPY's data aside); within a batch, no statement text follows
    // an Execute, and no Query comes between a batch's messages (the server would drop it unanswered after an error).
    const waiting: Array<Buffer> = []
    let waitingBytes = 0
    let owedReady = 0
    let copyIn = false
    let batchOpen = false
    let executed = false
    let lastSyncAfterExecute = false
    let resumeClient: (() => void) | undefined

    /** Sends what may go upstream now; false where the upstream socket wants a drain first. */
    const release = (): boolean => {
      const out: Array<Buffer> = []
      while (waiting.length > 0) {
        const message = waiting[0]!
        const type = message[0]!
        if (copyIn ? !COPY_MESSAGES.has(type) : owedReady > 0) break
        waiting.shift()
        waitingBytes -= message.length
        if ((executed && (type === 0x50 /* Parse */ || type === 0x51 /* Query */)) || (batchOpen && type === 0x51)) {
          writeAudit()
          fatal(
            "08P01",
            type === 0x51 && batchOpen
              ? "Sluice: the dbt proxy takes no Query inside an extended-protocol batch (send Sync first)"
              : "Sluice: the dbt proxy takes no statement text after an Execute until Sync (send Sync between pipelined statements)"
          )
          return true
        }
        const sent = fromClient(message)
        if (sent === null) {
          writeAudit()
          fatal("42501", "Sluice: fast-path function calls (and messages the proxy cannot read) are not allowed through the dbt proxy")
          return true
        }
        out.push(sent)
        if (EXTENDED.has(type)) batchOpen = true
        if (type === 0x45 /* Execute */) executed = true
        if (type === 0x63 /* CopyDone */ || type === 0x66 /* CopyFail */) copyIn = false
        if (type === 0x51 /* Query */) {
          owedReady++
          lastSyncAfterExecute = false
        }
        // A Sync the server takes while COPY data flows is ignored by it: only one after the data's end is answered.
        if (type === 0x53 /* Sync */ && !copyIn) {
          owedReady++
          lastSyncAfterExecute = executed
          batchOpen = false
          executed = false
        }
      }
      // One write per client chunk: a write per message costs a delayed-ACK round trip.
      const drained = out.length === 0 || upstream.write(out.length === 1 ? out[0]! : Buffer.concat(out))
      flushAudit()
      if (waitingBytes < MAX_WAITING_BYTES && resumeClient !== undefined) {
        const resume = resumeClient
        resumeClient = undefined
        resume()
      }
      return drained
    }

    // A message that has not all arrived: its pieces, joined once it has (joining with every piece costs the square of its size).
    let pieces: Array<Buffer> = []
    let piecesBytes = 0
    let pieceNeeds = 0
    /** Takes a client chunk's messages; false where the client should pause (upstream wants a drain, or much is waiting). */
    const onClientData = (chunk: Uint8Array): boolean => {
      const piece = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      let data = piece
      if (piecesBytes > 0) {
        pieces.push(Buffer.from(piece))
        piecesBytes += piece.length
        if (pieceNeeds === 0 && piecesBytes >= 5) {
          pieces = [Buffer.concat(pieces)]
          pieceNeeds = 1 + pieces[0]!.readInt32BE(1)
        }
        if (pieceNeeds === 0 || (piecesBytes < pieceNeeds && pieceNeeds <= 1 + MAX_FRAME_BYTES && pieceNeeds >= 5)) return true
        data = Buffer.concat(pieces)
        pieces = []
        piecesBytes = 0
        pieceNeeds = 0
      }
      let at = 0
      let added = 0
      while (data.length - at >= 5) {
        const length = data.readInt32BE(at + 1)
        if (length < 4 || length > MAX_FRAME_BYTES) {
          writeAudit()
          fatal("08P01", "Sluice: a protocol message larger than the dbt proxy takes")
          return true
        }
        if (data.length - at < 1 + length) break
        const message = data.subarray(at, at + 1 + length)
        waiting.push(message)
        waitingBytes += message.length
        added++
        at += 1 + length
      }
      if (at < data.length) {
        pieces = [Buffer.from(data.subarray(at))]
        piecesBytes = data.length - at
        pieceNeeds = piecesBytes >= 5 ? 1 + pieces[0]!.readInt32BE(1) : 0
      }
      const drained = release()
      // What is still waiting is copied out of the chunk, whose memory the socket may reuse.
      for (let i = Math.max(0, waiting.length - added); i < waiting.length; i++) waiting[i] = Buffer.from(waiting[i]!)
      return drained && waitingBytes < MAX_WAITING_BYTES
    }

    /** A ReadyForQuery from the server: once none is owed, what waited may go. */
    const ready = () => {
      owedReady = Math.max(0, owedReady - 1)
      copyIn = false
      lastSyncAfterExecute = false
      if (owedReady === 0 && waiting.length > 0 && !ended) release()
    }

    // Frames from the server pass through as they come. Held whole, to be read: a small error frame while refusals are outstanding
    // (ours is swapped in), and every ParameterStatus (a server that reads statement text otherwise than it was pinned to ends the session).
    let kept: Array<Buffer> = []
    let keptBytes = 0
    let keptTotal = 0
    let passing = 0
    const swapped = (error: Buffer) => {
      for (const [marker, reason] of refusals) {
        if (error.includes(marker)) {
          refusals.delete(marker)
          return errorFrame("ERROR", "42501", `Sluice: ${reason}`)
        }
      }
      return error
    }
    const pinnedStill = (status: Buffer) => {
      const name = readCString(status, 5)
      const value = name === null ? null : readCString(status, name.next)
      const pinned = name?.text === null || name === null ? undefined : (READS_AS_CLASSIFIED as Record<string, string>)[name.text]
      return pinned === undefined || value?.text?.toUpperCase() === pinned.toUpperCase()
    }
    let readiesSeen = 0
    /** A server frame's type as it starts: ReadyForQuery lets held messages go (once this chunk is sent on); CopyInResponse lets COPY data go. */
    const noteFrame = (type: number) => {
      if (type === 0x5a /* ReadyForQuery */) readiesSeen++
      else if (type === 0x47 /* CopyInResponse */ && !copyIn) {
        copyIn = true
        // Started by an Execute whose Sync went up with it: the server takes that Sync while in COPY and ignores it.
        if (lastSyncAfterExecute && owedReady > 0) owedReady--
        lastSyncAfterExecute = false
        queueMicrotask(() => !ended && release())
      }
    }
    const keptFrame = (type: number, total: number) => type === S || (type === E && refusals.size > 0 && total <= MAX_HELD_ERROR_BYTES)
    upstream.on("data", (chunk: Buffer) => {
      const out: Array<Buffer> = []
      let at = 0
      let runStart = 0
      while (at < chunk.length) {
        if (passing > 0) {
          const n = Math.min(passing, chunk.length - at)
          passing -= n
          at += n
          continue
        }
        if (keptBytes === 0 && chunk.length - at >= 5 && !keptFrame(chunk[at]!, 1 + chunk.readInt32BE(at + 1))) {
          noteFrame(chunk[at]!)
          passing = 1 + chunk.readInt32BE(at + 1)
          continue
        }
        if (at > runStart) out.push(chunk.subarray(runStart, at))
        // A frame's header first (it may straddle chunks), then, for a frame that is kept, the rest; pieces are joined once.
        const header = keptBytes < 5 ? Buffer.concat([...kept, chunk.subarray(at, at + 5 - keptBytes)]) : null
        const take = keptBytes < 5 ? Math.min(chunk.length - at, 5 - keptBytes) : Math.min(chunk.length - at, keptTotal - keptBytes)
        kept.push(chunk.subarray(at, at + take))
        keptBytes += take
        at += take
        runStart = at
        if (header !== null) {
          if (header.length < 5) continue
          kept = [header]
          keptTotal = 1 + header.readInt32BE(1)
          noteFrame(header[0]!)
          if (!keptFrame(header[0]!, keptTotal)) {
            out.push(header)
            passing = keptTotal - 5
            kept = []
            keptBytes = 0
            continue
          }
        }
        if (keptBytes < keptTotal) continue
        const whole = kept.length === 1 ? kept[0]! : Buffer.concat(kept)
        kept = []
        keptBytes = 0
        if (whole[0] === S && !pinnedStill(whole)) {
          fatal("42501", "Sluice: the session changed how the server reads statement text; it ends")
          return upstream.destroy()
        }
        out.push(whole[0] === E ? swapped(whole) : whole)
      }
      if (at > runStart) out.push(chunk.subarray(runStart, at))
      if (out.length === 0 || socket.destroyed) return
      // A client that reads slower than its server answers holds the server back, not the gateway's memory.
      if (!socket.write(out.length === 1 ? out[0]! : Buffer.concat(out))) {
        upstream.pause()
        socket.once("drain", () => upstream.resume())
      }
      for (; readiesSeen > 0; readiesSeen--) ready()
    })

    // The credential behind the token is checked again while the session is open: a deleted key ends it.
    const recheck = setInterval(() => {
      void runPromise(Effect.either(tokens.actingFor(claims))).then((still) => {
        if (still._tag === "Left" && !ended) fatal("28000", "Sluice: the credential that minted this run token no longer holds the dbt_proxy scope")
      })
    }, RECHECK_MS)
    socket.once("close", () => clearInterval(recheck))

    // The client's socket is read directly from here (a web stream's read costs a promise per chunk): pg-gateway's adapter stops
    // taking its data first, then whatever it had queued (a client that sent before it was answered) is taken from it, in order.
    socket.removeAllListeners("data")
    const reader = duplex.readable.getReader()
    for (;;) {
      const queued = await Promise.race([reader.read().catch(() => null), new Promise<null>((resolve) => setImmediate(() => resolve(null)))])
      if (queued === null || queued.done) break
      onClientData(queued.value)
    }
    socket.on("data", (chunk: Buffer) => {
      if (ended || onClientData(chunk)) return
      socket.pause()
      // Read again once the server has taken what went up and what waits for its answer is small again.
      const resumeWhenClear = () => {
        if (ended) return
        if (upstream.writableNeedDrain) return void upstream.once("drain", resumeWhenClear)
        if (waitingBytes >= MAX_WAITING_BYTES) return void (resumeClient = resumeWhenClear)
        socket.resume()
      }
      resumeWhenClear()
    })
    socket.once("end", () => upstream.end())
    socket.resume()
  }

  return { accept } as const
})
