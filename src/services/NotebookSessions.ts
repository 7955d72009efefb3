import { createHash, randomBytes, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Clock, Duration, Effect, Fiber, Runtime } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { DEFAULT_LIMITS, type NotebookProcess, SandboxProcesses } from "../../layers/SandboxProcesses"
import { CapacityReached, Conflict, NotAvailableHere, NotFound, Unauthenticated, Unavailable } from "../domain/Errors"
import { NotebookSessionId, type OrgId } from "../domain/Ids"
import { sessionOrigin } from "../domain/NotebookOrigin"
import type { NotebookSession, StartNotebookSession } from "../domain/NotebookSession"
import type { Principal } from "../domain/Principal"
import { ALL_SCOPES } from "../domain/Scope"
import { isStarter, starterOf } from "../domain/Starter"
import { type NotebookSessionRow, NotebookSessionsRepo } from "../repos/NotebookSessionsRepo"
import { ActingPrincipals } from "./ActingPrincipals"
import { type CodeSource, CodeQueries } from "./CodeQueries"
import { keyedLocks } from "./KeyedLocks"
import { Connections } from "./Connections"
import { CODE_SCOPES } from "./Sandboxes"

/** A session whose Jupyter server runs in this gateway process. */
interface Live {
  readonly row: NotebookSessionRow
  readonly process: NotebookProcess
  readonly jupyterToken: string
  lastActivityMs: number
  /** The WebSocket connections proxied to it, told why when it ends. */
  readonly sockets: Set<{ readonly end: (reason: string) => void }>
  reaper: Fiber.RuntimeFiber<unknown> | undefined
  /** One-time links' tickets not yet used (SHA-256 → when each expires) and the browser cookies they became (SHA-256). */
  readonly tickets: Map<string, number>
  readonly cookies: Set<string>
  /** It started with its work folder over the disk quota: writes and kernels refused until files are deleted. */
  overQuota: boolean
}

/** Where the proxy forwards a caller's request: the session's server and the token it expects. */
export interface NotebookTarget {
  readonly socketPath: string
  readonly jupyterToken: string
  /** Registers a proxied WebSocket, told why when the session ends; returns its removal. */
  readonly holdSocket: (socket: { readonly end: (reason: string) => void }) => () => void
  /** Why the session takes no writes or kernels now (its work folder is over the disk quota); null when it does. */
  readonly refusingWrites: () => string | null
}

const KERNEL_PROCESSES = 256
const DISK_CHECK = Duration.seconds(2)
// The starter's credential is checked again every this many disk checks (20 s).
const CREDENTIAL_CHECK_EVERY = 10
const TICKET_MS = 60_000
const EVERY_SCOPE = new Set(ALL_SCOPES)
const TICKETS_HELD = 32
const SIGN_INS_HELD = 32

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex")

/**
 * Notebook sessions: a Jupyter server (the classic notebook UI and Python kernels) per credential
 * (an API key, or a user's sign-in), under a sandbox's isolation, in that credential's own work
 * directory, with the same governed `sluice` module; reached only through the gateway's proxy at
 * /notebook/{id}/. One active session per credential. A session idle for SP_NOTEBOOK_IDLE_TIMEOUT
 * is ended, and its open connections are told why.
 */
export class NotebookSessions extends Effect.Service<NotebookSessions>()("sluice/NotebookSessions", {
  scoped: Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* NotebookSessionsRepo
    const processes = yield* SandboxProcesses
    const connections = yield* Connections
    const codeQueries = yield* CodeQueries
    const acting = yield* ActingPrincipals
    const runtime = yield* Effect.runtime<never>()
    const host = processes.holder
    const live = new Map<NotebookSessionId, Live>()
    const idleMs = config.notebookIdleTimeoutSeconds * 1000
    const limits = { ...DEFAULT_LIMITS, memoryMb: config.sandboxMemoryMb, diskMb: config.sandboxDiskMb, processes: KERNEL_PROCESSES }
    const quotaBytes = config.sandboxDiskMb * 1024 * 1024

    const urlOf = (id: string) => `${sessionOrigin(config.notebookOrigins, id)}/notebook/${id}/tree`
    const safe = (part: string) => part.replace(/[^A-Za-z0-9_.-]/g, "_")
    /**
     * The credential's notebooks and files, kept across its sessions (another key of the same user has
     * its own: files one left must not run with the other's rights); the folders above it let sandbox
     * uids through to it, and list nothing.
     */
    const workDirOf = (row: NotebookSessionRow) => {
      const orgDir = path.join(config.notebookDir, safe(row.org_id))
      const userDir = path.join(orgDir, safe(row.user_id))
      for (const dir of [config.notebookDir, orgDir, userDir]) {
        fs.mkdirSync(dir, { recursive: true })
        fs.chmodSync(dir, 0o711)
      }
      return path.join(userDir, row.key_id === null ? row.principal_kind : `key-${safe(row.key_id)}`)
    }

    const view = (row: NotebookSessionRow, reused = false): NotebookSession => {
      const running = live.get(row.id)
      const lastActivity = running === undefined ? row.last_activity_at.getTime() : running.lastActivityMs
      return {
        id: row.id,
        status: row.status,
        url: urlOf(row.id),
        connection_name: row.connection_name,
        reused,
        idle_timeout_seconds: config.notebookIdleTimeoutSeconds,
        idle_deadline: row.status === "running" ? new Date(lastActivity + idleMs).toISOString() : null,
        error: row.error,
        created_at: row.created_at.toISOString(),
        last_activity_at: new Date(lastActivity).toISOString()
      }
    }

    const notAvailable = new NotAvailableHere({
      message: "Notebook sessions run on the gateway's own host, which cloud mode does not offer until a remote sandbox provider is configured"
    })

    const owned = (principal: Principal, id: string) =>
      Effect.gen(function* () {
        const row = yield* repo.find(principal.orgId, NotebookSessionId.make(id))
        if (row === null || !isStarter(principal, row)) return yield* new NotFound({ message: `No notebook session ${id}` })
        return row
      })

    /** Ends a live session for `reason`: its server stopped, its open connections told, its record saying why. */
    const end = (session: Live, status: "stopped" | "error", reason: string | null) =>
      Effect.gen(function* () {
        if (live.get(session.row.id) !== session) return
        live.delete(session.row.id)
        for (const socket of session.sockets) socket.end(reason ?? "The notebook session was stopped")
        session.sockets.clear()
        if (session.reaper !== undefined) yield* Fiber.interrupt(session.reaper)
        yield* session.process.stop
        yield* repo.status(session.row.org_id, session.row.id, status, reason).pipe(Effect.ignoreLogged)
      })

    /** Ends the session once nothing has used it for the idle timeout. */
    const reap = (session: Live): Effect.Effect<void> =>
      Effect.gen(function* () {
        while (live.get(session.row.id) === session) {
          const now = yield* Clock.currentTimeMillis
          const due = session.lastActivityMs + idleMs
          if (now < due) {
            yield* Effect.sleep(Duration.millis(Math.max(due - now, 50)))
            continue
          }
          yield* Effect.forkDaemon(end(session, "stopped", `The notebook session ended after ${config.notebookIdleTimeoutSeconds} s without use; start a new one (your files are kept)`))
          return
        }
      })

    /**
     * Every few seconds, the work folder against the disk quota, and now and then the starter's
     * credential. A session that goes over the quota ends, and all it ran with it (a process its code
     * left behind included); one started over it takes no writes and runs no kernels until files are
     * deleted. A credential that no longer opens anything (a deleted key) ends its session too.
     */
    const watch = (session: Live): Effect.Effect<void> =>
      Effect.gen(function* () {
        for (let checks = 1; live.get(session.row.id) === session; checks++) {
          yield* Effect.sleep(DISK_CHECK)
          const over = (yield* session.process.workBytes) > quotaBytes
          if (over && !session.overQuota) {
            const reason = `Its work folder went over its ${config.sandboxDiskMb} MiB disk quota; start it again to delete files (until the folder is under the quota, it takes no writes and runs no kernels)`
            return yield* Effect.forkDaemon(end(session, "error", reason))
          }
          session.overQuota = over
          if (checks % CREDENTIAL_CHECK_EVERY !== 0) continue
          const starter = yield* Effect.either(starterNow(session))
          if (starter._tag === "Left" && starter.left._tag === "Unauthenticated") return yield* Effect.forkDaemon(end(session, "stopped", starter.left.message))
        }
      })

    const launch = (row: NotebookSessionRow) =>
      Effect.gen(function* () {
        const token = randomBytes(32).toString("hex")
        const jupyterToken = randomBytes(32).toString("hex")
        let session: Live | undefined
        const source: CodeSource = {
          kind: "notebook",
          id: row.id,
          credential: { orgId: row.org_id, userId: row.user_id, principalKind: row.principal_kind, keyId: row.key_id },
          scopes: row.scopes,
          connectionName: row.connection_name,
          rowLimit: null,
          budgetUsd: null,
          token: Buffer.from(token),
          counters: { queries: 0, spentUsd: 0 },
          budgetLock: yield* Effect.makeSemaphore(1),
          running: () => session !== undefined && live.get(row.id) === session,
          report: () => undefined,
          caller: () => undefined
        }
        const started = yield* processes
          .startNotebook({
            limits,
            token,
            onData: (request) => Runtime.runPromise(runtime)(codeQueries.answer(source, request)),
            workDir: workDirOf(row),
            jupyterToken,
            baseUrl: `/notebook/${row.id}/`
          })
          .pipe(
            Effect.catchTags({
              NoFreeSlot: () => new CapacityReached({ message: "This gateway runs as many notebook sessions as it may; try again once one ends" }),
              SandboxesUnavailable: (error) => new Unavailable({ message: error.message }),
              SandboxProcessEnded: (error) => new Unavailable({ message: `The notebook session could not start: ${error.reason}` })
            })
          )
        session = { row, process: started, jupyterToken, lastActivityMs: yield* Clock.currentTimeMillis, sockets: new Set(), reaper: undefined, tickets: new Map(), cookies: new Set(), overQuota: (yield* started.workBytes) > quotaBytes }
        live.set(row.id, session)
        const held = session
        held.reaper = yield* Effect.forkDaemon(Effect.zip(reap(held), watch(held), { concurrent: true }))
        // A server that ends by itself (killed for memory, crashed) ends the session, saying why.
        started.ended.then((reason) => Runtime.runFork(runtime)(end(held, "error", reason)))
        return held
      })

    /** A folder above SP_NOTEBOOK_DIR that other users cannot enter: a session's uid could not reach its own work directory. */
    const closedAncestor = () => {
      if (process.getuid?.() !== 0) return undefined
      for (let dir = path.dirname(config.notebookDir); ; dir = path.dirname(dir)) {
        const stat = fs.statSync(dir, { throwIfNoEntry: false })
        if (stat !== undefined && (stat.mode & 0o001) === 0) return dir
        if (dir === path.dirname(dir)) return undefined
      }
    }
    // The operator learns the folder from the log; the caller, that the gateway's setting is wrong.
    const reachable = Effect.suspend(() => {
      const closed = closedAncestor()
      return closed === undefined
        ? Effect.void
        : Effect.zipRight(
            Effect.logError(`notebook sessions cannot start: SP_NOTEBOOK_DIR (${config.notebookDir}) is inside ${closed}, which a session's uid cannot enter; set SP_NOTEBOOK_DIR to a folder such as /var/lib/sluice-notebooks`),
            Effect.fail(new Unavailable({ message: "Notebook sessions cannot start on this gateway: its notebook folder (SP_NOTEBOOK_DIR) is out of a session's reach; the gateway's log says what to change" }))
          )
    })

    // One start or delete at a time per credential: concurrent starts find the one they began, and a start racing a delete sees it done.
    const perStarter = keyedLocks<string>()
    const serialized = <A, E, R>(principal: Principal, work: Effect.Effect<A, E, R>) =>
      perStarter(`${principal.orgId}\n${principal.userId}\n${principal.kind}\n${principal.keyId ?? ""}`, work)

    /** A one-time link to the session's UI for a browser, which cannot send a key with a page it opens. */
    const openUrl = (session: Live, now: number) => {
      for (const [ticket, expires] of session.tickets) if (expires <= now || session.tickets.size >= TICKETS_HELD) session.tickets.delete(ticket)
      const ticket = randomBytes(32).toString("hex")
      session.tickets.set(sha256(ticket), now + TICKET_MS)
      return `${sessionOrigin(config.notebookOrigins, session.row.id)}/notebook/${session.row.id}/open?ticket=${ticket}`
    }

    /** The caller's active session, started when there is none (one per credential: a key, or a user's session or local access), with a one-time link to open it. */
    const start = (principal: Principal, input: StartNotebookSession) =>
      serialized(
        principal,
        Effect.flatMap(startOnce(principal, input), (started) =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            const session = live.get(NotebookSessionId.make(started.id))
            return session === undefined ? started : { ...started, open_url: openUrl(session, now) }
          })
        )
      )
    const startOnce = Effect.fn("NotebookSessions.start")(function* (principal: Principal, input: StartNotebookSession) {
      if (!config.selfHosted) return yield* notAvailable
      if (config.notebookPort === 0) return yield* new Unavailable({ message: "Notebook sessions are off on this gateway (SP_NOTEBOOK_PORT=0)" })
      if (input.connection_name !== undefined) yield* connections.target(principal, input.connection_name)
      yield* reachable
      const existing = yield* repo.active(principal.orgId, starterOf(principal))
      if (existing !== null) {
        if (live.has(existing.id)) return view(existing, true)
        // Held by this process before it restarted: its server is gone.
        if (existing.host === host) yield* repo.status(existing.org_id, existing.id, "stopped", "The gateway restarted")
        else return yield* new Conflict({ message: "This credential has an active notebook session on another gateway replica; delete it first" })
      }
      const row = yield* repo.insert(principal.orgId, {
        id: NotebookSessionId.make(`nb_${randomUUID().replace(/-/g, "")}`),
        user_id: principal.userId,
        principal_kind: principal.kind,
        key_id: principal.keyId,
        created_by: principal.keyPrefix === null ? `user:${principal.userId}` : `key:${principal.keyPrefix}`,
        scopes: principal.scopes.filter((scope) => CODE_SCOPES.has(scope)),
        connection_name: input.connection_name ?? null,
        host
      })
      yield* launch(row).pipe(Effect.tapError((error) => repo.status(row.org_id, row.id, "error", error.message)))
      const running = yield* repo.status(row.org_id, row.id, "running")
      if (running === null) return yield* new NotFound({ message: `No notebook session ${row.id}` })
      return view(running)
    })

    const get = Effect.fn("NotebookSessions.get")(function* (principal: Principal, id: string) {
      return view(yield* owned(principal, id))
    })

    /** Keeps the session alive: its idle timeout starts again. */
    const ping = Effect.fn("NotebookSessions.ping")(function* (principal: Principal, id: string) {
      const row = yield* owned(principal, id)
      const session = live.get(row.id)
      if (session === undefined) return yield* new Conflict({ message: `The notebook session is ${row.status}${row.error === null ? "" : `: ${row.error}`}` })
      session.lastActivityMs = yield* Clock.currentTimeMillis
      yield* repo.touch(row.org_id, row.id)
      return view(row)
    })

    const remove = (principal: Principal, id: string) => serialized(principal, removeOnce(principal, id))
    const removeOnce = Effect.fn("NotebookSessions.remove")(function* (principal: Principal, id: string) {
      const row = yield* owned(principal, id)
      const session = live.get(row.id)
      if (session !== undefined) yield* end(session, "stopped", null)
      else if (row.status === "starting" || row.status === "running") yield* repo.status(row.org_id, row.id, "stopped", null)
      return { id: row.id, deleted: true }
    })

    const linkRefused = new Unauthenticated({ message: "This notebook link has expired or was used already; open the notebook again (the web app's Open notebook, or POST /api/notebook-sessions)" })
    const signedOut = new Unauthenticated({ message: "This browser is not signed in to this notebook session; open the notebook again (the web app's Open notebook, or POST /api/notebook-sessions)" })

    /** Who a browser signed in to a session acts as: the session's starter, its credential checked again (a deleted key signs it out). */
    const starterNow = (session: Live) =>
      acting.actingAs(
        { orgId: session.row.org_id, userId: session.row.user_id, principalKind: session.row.principal_kind, keyId: session.row.key_id },
        EVERY_SCOPE,
        "notebook session"
      ).pipe(Effect.catchTag("CredentialGone", (gone) => new Unauthenticated({ message: gone.message })))

    /** A one-time link's ticket exchanged for a browser cookie signed in to this session alone; the link is spent. */
    const exchangeTicket = Effect.fn("NotebookSessions.exchangeTicket")(function* (id: string, ticket: string) {
      const session = live.get(NotebookSessionId.make(id))
      const hash = sha256(ticket)
      const expires = session?.tickets.get(hash)
      if (session === undefined || expires === undefined) return yield* linkRefused
      session.tickets.delete(hash)
      if (expires <= (yield* Clock.currentTimeMillis)) return yield* linkRefused
      const principal = yield* starterNow(session)
      const cookie = randomBytes(32).toString("hex")
      // The oldest browser's sign-in goes first when a session has been opened many times.
      if (session.cookies.size >= SIGN_INS_HELD) session.cookies.delete(session.cookies.values().next().value!)
      session.cookies.add(sha256(cookie))
      return { principal, cookie }
    })

    /** Who a browser's session cookie acts as: the starter of the session it was issued for, and only there. */
    const cookiePrincipal = Effect.fn("NotebookSessions.cookiePrincipal")(function* (id: string, cookie: string) {
      const session = live.get(NotebookSessionId.make(id))
      if (session === undefined || !session.cookies.has(sha256(cookie))) return yield* signedOut
      return yield* starterNow(session)
    })

    /** Where the proxy sends the caller's request for session `id`: another user's or org's is not found; one not running is a conflict. */
    const target = Effect.fn("NotebookSessions.target")(function* (principal: Principal, id: string) {
      const session = live.get(NotebookSessionId.make(id))
      if (session === undefined || !isStarter(principal, session.row)) {
        const row = yield* owned(principal, id)
        return yield* new Conflict({ message: `The notebook session is ${row.status === "starting" || row.status === "running" ? "not running on this gateway" : row.status}${row.error === null ? "" : `: ${row.error}`}` })
      }
      session.lastActivityMs = yield* Clock.currentTimeMillis
      const found: NotebookTarget = {
        socketPath: session.process.socketPath,
        jupyterToken: session.jupyterToken,
        holdSocket: (socket) => {
          session.sockets.add(socket)
          return () => session.sockets.delete(socket)
        },
        refusingWrites: () =>
          session.overQuota
            ? `The notebook's work folder is over its ${config.sandboxDiskMb} MiB disk quota: delete files to go on (until then it takes no writes and runs no kernels)`
            : null
      }
      return found
    })

    /** Sessions this process held when it last stopped: their servers are gone. */
    const settled = yield* repo.heldBy(host).pipe(Effect.orElseSucceed(() => []))
    for (const row of settled) yield* repo.status(row.org_id as OrgId, row.id, "stopped", "The gateway stopped").pipe(Effect.ignore)

    yield* Effect.addFinalizer(() => Effect.forEach([...live.values()], (session) => end(session, "stopped", "The gateway stopped"), { concurrency: "unbounded", discard: true }))

    return { start, get, ping, remove, target, exchangeTicket, cookiePrincipal } as const
  }),
  dependencies: [NotebookSessionsRepo.Default, SandboxProcesses.Default, Connections.Default, CodeQueries.Default, ActingPrincipals.Default]
}) {}
