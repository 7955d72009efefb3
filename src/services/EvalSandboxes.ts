import { Chunk, Clock, Deferred, Duration, Effect, FiberId, Option, Stream } from "effect"
import { NotFound, RateLimited } from "../domain/Errors"
import type { OrgId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { type EvalSandbox, type EvalSandboxEvent, type EvalSandboxEventType, evalSandboxName, type ScriptPhase } from "../domain/EvalSandbox"
import { EvalAccess } from "./EvalAccess"

/** Log streams open at once on one gateway process; the next is refused with 429. */
export const MAX_LOG_STREAMS = 8
/**
 * What one log stream sends before it ends, and for how long it may stay open; how often it says
 * it is alive; how long a stream asked for may take to begin (its client left first) before its
 * place is given back.
 */
export const LOG_STREAM_LIMITS = { bytes: 2 * 1024 * 1024, ms: 30 * 60_000, heartbeatMs: 15_000, reservationMs: 10_000 }
export type LogStreamLimits = typeof LOG_STREAM_LIMITS
/** A sandbox's log kept while it runs and a while after: as much as its task's evidence keeps. */
export const LOG_CHARS = 1_000_000
// Ended sandboxes stay listed (their events and log readable) this long, at most this many of an organization's.
const ENDED_KEPT_MS = 10 * 60_000
const ENDED_KEPT = 8
// A log event carries at most this much text, so a stream's byte cap cuts between events, never inside one.
const EVENT_CHARS = 16_384
// The most runs a log is kept in: past them (a script switching between stdout and stderr at every print), it is cut.
const MAX_PIECES = 4096
// What one step of a stream sends at most, so a follower never holds the process long.
const STEP_BYTES = 256 * 1024
// Kept of a stream's bytes for what is not log (heartbeats for its whole time, its last event).
const NOT_LOG_BYTES = 16_384

/** A run of the log printed to one stream, at most EVENT_CHARS: many small prints share one. */
interface Piece {
  readonly at: number
  readonly stream: "stdout" | "stderr"
  /** Its text as it came, joined every so often (a million one-character prints are not a million strings). */
  parts: Array<string>
  length: number
}

const JOIN_PARTS = 256
const textOf = (piece: Piece) => {
  if (piece.parts.length > 1) piece.parts = [piece.parts.join("")]
  return piece.parts[0] ?? ""
}

interface Tracked {
  readonly name: string
  readonly orgId: OrgId
  readonly runId: string
  readonly taskId: string
  readonly phase: ScriptPhase
  readonly script: string
  readonly memoryMb: number
  readonly createdAt: Date
  status: EvalSandbox["status"]
  sandboxId: string | null
  endedAt: Date | null
  readonly events: Array<EvalSandboxEvent>
  readonly log: Array<Piece>
  logChars: number
  /** Its log is cut: what it prints now is not kept. */
  cut: boolean
  /** Done at the next change, for the followers waiting on it (made when one waits: a change no one waits for costs nothing). */
  changed: Deferred.Deferred<void> | null
}

/** What a task's script step tells the feed about its sandbox. */
export interface EvalSandboxFeed {
  readonly started: (sandboxId: string) => void
  readonly event: (type: EvalSandboxEventType, message: string) => void
  readonly output: (stream: "stdout" | "stderr", text: string) => void
}

const sse = (event: string, data: unknown, id?: number) => `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

/**
 * The live side of evaluation runs on this gateway: each task script's sandbox, its events (the
 * gateway's own record: started, oom_killed, exited…) and its log as the script prints it, for
 * `GET /api/evals/sandboxes…`. Held in this process, where the sandboxes run; a finished script's
 * log stays in its task's evidence.
 */
export class EvalSandboxes extends Effect.Service<EvalSandboxes>()("sluice/EvalSandboxes", {
  effect: Effect.gen(function* () {
    const access = yield* EvalAccess
    const tracked = new Map<string, Tracked>()
    const streams = new Set<{ readonly reservedUntil: number; began: boolean }>()

    const changed = (entry: Tracked) => {
      if (entry.changed === null) return
      Deferred.unsafeDone(entry.changed, Effect.void)
      entry.changed = null
    }
    const nextChange = (entry: Tracked) => (entry.changed ??= Deferred.unsafeMake<void>(FiberId.none))
    const record = (entry: Tracked, type: EvalSandboxEventType, message: string) => {
      entry.events.push({ at: new Date().toISOString(), type, message: message.slice(0, 2000) })
      changed(entry)
    }
    const cut = (entry: Tracked, why: string) => {
      entry.cut = true
      record(entry, "log_cut", why)
    }
    /** Ended sandboxes past their time, and past each organization's ENDED_KEPT newest (one organization's never push out another's). */
    const forget = (now: number) => {
      const kept = new Map<OrgId, number>()
      const ended = [...tracked.values()].filter((entry) => entry.endedAt !== null).sort((a, b) => b.endedAt!.getTime() - a.endedAt!.getTime())
      for (const entry of ended) {
        const index = kept.get(entry.orgId) ?? 0
        kept.set(entry.orgId, index + 1)
        if (index >= ENDED_KEPT || now - entry.endedAt!.getTime() > ENDED_KEPT_MS) tracked.delete(entry.name)
      }
    }

    /**
     * Follows a task's script sandbox while `use` runs it: listed from now, ended when `use` ends
     * however it ends (its log readable a while after).
     */
    const track = <A, E, R>(
      info: { readonly orgId: OrgId; readonly runId: string; readonly taskId: string; readonly phase: ScriptPhase; readonly script: string; readonly memoryMb: number },
      use: (feed: EvalSandboxFeed) => Effect.Effect<A, E, R>
    ) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          forget(Date.now())
          const entry: Tracked = {
            ...info,
            name: evalSandboxName(info.runId, info.taskId, info.phase),
            createdAt: new Date(),
            status: "starting",
            sandboxId: null,
            endedAt: null,
            events: [],
            log: [],
            logChars: 0,
            cut: false,
            changed: null
          }
          // A task tried again replaces its earlier try's entry; that one's followers are told it ended.
          const earlier = tracked.get(entry.name)
          if (earlier !== undefined && earlier.endedAt === null) {
            earlier.endedAt = new Date()
            earlier.status = "ended"
            changed(earlier)
          }
          tracked.set(entry.name, entry)
          record(entry, "scheduled", `${info.phase} script ${info.script}, memory limit ${info.memoryMb} MiB`)
          return entry
        }),
        (entry) =>
          use({
            started: (sandboxId) => {
              entry.sandboxId = sandboxId
              entry.status = "running"
              record(entry, "started", `sandbox ${sandboxId}`)
            },
            event: (type, message) => record(entry, type, message),
            output: (stream, text) => {
              if (entry.endedAt !== null || entry.cut) return
              let rest = text.slice(0, LOG_CHARS - entry.logChars)
              while (rest.length > 0) {
                let last = entry.log.at(-1)
                if (last === undefined || last.stream !== stream || last.length >= EVENT_CHARS) {
                  if (entry.log.length >= MAX_PIECES) return cut(entry, `its log changed between stdout and stderr more than ${MAX_PIECES} times; the rest is not kept`)
                  last = { at: entry.logChars, stream, parts: [], length: 0 }
                  entry.log.push(last)
                }
                const part = rest.slice(0, EVENT_CHARS - last.length)
                last.parts.push(part)
                last.length += part.length
                if (last.parts.length >= JOIN_PARTS) textOf(last)
                entry.logChars += part.length
                rest = rest.slice(part.length)
              }
              if (entry.logChars >= LOG_CHARS) cut(entry, `its log passed ${LOG_CHARS} characters; the rest is not kept`)
              else changed(entry)
            }
          }),
        (entry) =>
          Effect.sync(() => {
            entry.status = "ended"
            entry.endedAt = new Date()
            record(entry, "removed", "the sandbox was removed")
          })
      )

    const view = (entry: Tracked): EvalSandbox => ({
      name: entry.name,
      run_id: entry.runId,
      task_id: entry.taskId,
      phase: entry.phase,
      script: entry.script,
      status: entry.status,
      sandbox_id: entry.sandboxId,
      memory_limit_mb: entry.memoryMb,
      log_chars: entry.logChars,
      created_at: entry.createdAt.toISOString(),
      ended_at: entry.endedAt?.toISOString() ?? null,
      last_event: entry.events.at(-1)?.type ?? "scheduled"
    })

    /** The organization's sandbox of that name on this gateway; another organization's is not found. */
    const visible = (principal: Principal, name: string) =>
      Effect.zipRight(
        access.allowed(principal),
        Effect.suspend(() => {
          forget(Date.now())
          const entry = tracked.get(name)
          return entry === undefined || entry.orgId !== principal.orgId
            ? Effect.fail(new NotFound({ message: `No evaluation sandbox ${name} on this gateway (a finished one's log is its task's setup or teardown log)` }))
            : Effect.succeed(entry)
        })
      )

    const list = Effect.fn("EvalSandboxes.list")(function* (principal: Principal, runId?: string) {
      yield* access.allowed(principal)
      forget(Date.now())
      const items = [...tracked.values()]
        .filter((entry) => entry.orgId === principal.orgId && (runId === undefined || entry.runId === runId))
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.name.localeCompare(b.name))
      return { items: items.map(view) }
    })

    const events = Effect.fn("EvalSandboxes.events")(function* (principal: Principal, name: string) {
      const entry = yield* visible(principal, name)
      return { items: [...entry.events] }
    })

    /** The first piece of the log that holds text at `offset` or after it. */
    const pieceAt = (entry: Tracked, offset: number) => {
      let low = 0
      let high = entry.log.length
      while (low < high) {
        const middle = (low + high) >>> 1
        const piece = entry.log[middle]!
        if (piece.at + piece.length <= offset) low = middle + 1
        else high = middle
      }
      return low
    }

    /**
     * The log from `offset` on as `log` events, as many as fit in `budget` bytes (at most
     * STEP_BYTES): the events, their bytes, and the offset after them; none when the next one alone
     * does not fit.
     */
    const logEvents = (entry: Tracked, offset: number, budget: number) => {
      const events: Array<string> = []
      let bytes = 0
      let at = offset
      for (let index = pieceAt(entry, offset); index < entry.log.length && bytes < STEP_BYTES; index++) {
        const piece = entry.log[index]!
        const text = textOf(piece).slice(Math.max(at - piece.at, 0))
        const event = sse("log", { stream: piece.stream, text, offset: at }, at + text.length)
        const size = Buffer.byteLength(event)
        if (bytes + size > budget) break
        events.push(event)
        bytes += size
        at += text.length
      }
      return { text: events.join(""), bytes, offset: at }
    }

    /**
     * The sandbox's log as server-sent events from `offset` (a reconnect's Last-Event-ID): `open`
     * (where it begins), `log` events (`id` is the offset after each), `heartbeat` while nothing is printed, `end` once the
     * sandbox has ended and its log is all sent, `limit` when the stream has sent its bytes or been
     * open its time (open it again from the last id to go on).
     */
    const follow = (entry: Tracked, offset: number, limits: LogStreamLimits, slot: { began: boolean }) =>
      Stream.unwrap(
        Effect.map(Clock.currentTimeMillis, (openedAt) => {
          slot.began = true
          const deadline = openedAt + limits.ms
          type State = { readonly offset: number; readonly sent: number; readonly done: boolean }
          const emit = (text: string, state: State, next: Partial<State>) => Option.some([text, { ...state, ...next, sent: state.sent + Buffer.byteLength(text) }] as const)
          const limit = (state: State, why: string) => emit(sse("limit", { message: why, offset: state.offset }), state, { done: true })
          const from = Math.min(offset, entry.logChars)
          // Said at once, so the client has its answer before the script prints anything.
          const opened = sse("open", { name: entry.name, status: entry.status, offset: from, log_chars: entry.logChars })
          return Stream.unfoldEffect({ offset: from, sent: Buffer.byteLength(opened), done: false } as State, (state) =>
            Effect.gen(function* () {
              if (state.done) return Option.none()
              const signal = nextChange(entry)
              if (state.offset < entry.logChars) {
                const read = logEvents(entry, state.offset, limits.bytes - NOT_LOG_BYTES - state.sent)
                if (read.bytes === 0) return limit(state, `This stream sent its ${limits.bytes} bytes; open it again with Last-Event-ID ${state.offset} to go on`)
                return Option.some([read.text, { ...state, offset: read.offset, sent: state.sent + read.bytes }] as const)
              }
              if (entry.endedAt !== null) {
                return emit(sse("end", { status: entry.status, last_event: entry.events.at(-1)?.type ?? null, log_chars: entry.logChars, log: `/api/evals/runs/${entry.runId}/tasks/${entry.taskId}/setup/${entry.phase}/log` }), state, { done: true })
              }
              const now = yield* Clock.currentTimeMillis
              if (now >= deadline) return limit(state, `This stream was open ${Math.round(limits.ms / 1000)} s; open it again with Last-Event-ID ${state.offset} to go on`)
              const woken = yield* Deferred.await(signal).pipe(Effect.timeoutOption(Duration.millis(Math.min(limits.heartbeatMs, deadline - now))))
              if (Option.isSome(woken)) return Option.some(["", state] as const)
              const at = yield* Clock.currentTimeMillis
              if (at >= deadline) return Option.some(["", state] as const)
              return emit(sse("heartbeat", { at: new Date(at).toISOString() }), state, {})
            })
          ).pipe(Stream.filter((text) => text !== ""), Stream.prepend(Chunk.of(opened)))
        })
      )

    /** Follows the sandbox's log; at most MAX_LOG_STREAMS at once on this gateway (429, Retry-After 15, beyond). */
    const logStream = Effect.fn("EvalSandboxes.logStream")(function* (principal: Principal, name: string, offset: number, limits: LogStreamLimits = LOG_STREAM_LIMITS) {
      const entry = yield* visible(principal, name)
      const now = Date.now()
      for (const slot of streams) if (!slot.began && now > slot.reservedUntil) streams.delete(slot)
      if (streams.size >= MAX_LOG_STREAMS) {
        return yield* new RateLimited({ message: `At most ${MAX_LOG_STREAMS} evaluation log streams may be open at once on this gateway`, retry_after_seconds: 15 })
      }
      const slot = { reservedUntil: now + limits.reservationMs, began: false }
      streams.add(slot)
      return follow(entry, offset, limits, slot).pipe(
        Stream.encodeText,
        Stream.ensuring(Effect.sync(() => streams.delete(slot)))
      )
    })

    return { track, list, events, logStream } as const
  }),
  dependencies: [EvalAccess.Default]
}) {}
