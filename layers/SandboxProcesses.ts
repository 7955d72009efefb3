import { type ChildProcess, execFile, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { Data, Effect, Option, Schema } from "effect"
import { AppConfig } from "./AppConfig"
import { diskBytes } from "./DiskUsage"
import { PACKAGE_ROOT } from "./PackageRoot"

/** What one sandbox process may use. */
export interface SandboxLimits {
  readonly memoryMb: number
  /** CPU seconds the process and each of its children may use in their life. */
  readonly cpuSeconds: number
  readonly processes: number
  readonly openFiles: number
  /** The largest file it may write. */
  readonly fileMb: number
  /** Its /tmp, in memory. */
  readonly tmpMb: number
  /** Characters kept of each of stdout and stderr per execute. */
  readonly outputChars: number
  /** What its work directory may hold on disk, checked every second while its code runs. */
  readonly diskMb: number
}

export const DEFAULT_LIMITS: SandboxLimits = { memoryMb: 1024, cpuSeconds: 900, processes: 64, openFiles: 256, fileMb: 256, tmpMb: 64, outputChars: 1024 * 1024, diskMb: 1024 }

export interface ExecuteResult {
  readonly success: boolean
  readonly stdout: string
  readonly stderr: string
  readonly error: string | null
  readonly execution_ms: number
  readonly truncated: boolean
}

/** The sandbox cannot run here: no bubblewrap, no Python, namespaces refused; `message` says what to install or change. */
export class SandboxesUnavailable extends Data.TaggedError("SandboxesUnavailable")<{ readonly message: string }> {}
/**
 * The process ended or was ended while it was asked something; `reason` says why in the user's
 * terms. `outOfMemory`: its cgroup says it was killed for memory (the gateway's own record, never
 * anything the code sent).
 */
export class SandboxProcessEnded extends Data.TaggedError("SandboxProcessEnded")<{ readonly reason: string; readonly outOfMemory?: boolean }> {}
/** Every slot holds a running sandbox. */
export class NoFreeSlot extends Data.TaggedError("NoFreeSlot")<{ readonly slots: number }> {}

/** What a running execute printed, as the runner sends it while the code runs. */
export type OutputListener = (stream: "stdout" | "stderr", text: string) => void

/** A piece of a live execute's output: the code may forge one (it shares the runner's interpreter), so it is only ever shown, never trusted. */
const outputPiece = (message: unknown): { readonly stream: "stdout" | "stderr"; readonly text: string } | undefined => {
  if (typeof message !== "object" || message === null) return undefined
  const { output, stream } = message as { output?: unknown; stream?: unknown }
  return typeof output === "string" && (stream === "stdout" || stream === "stderr") && Object.keys(message).length === 2 ? { stream, text: output } : undefined
}

/** A governed request the sandbox's `sluice` module sent over its socket, answered with a JSON-able value. */
export type DataRequestHandler = (request: unknown) => Promise<unknown>

/** How its limits are enforced: per-sandbox cgroups where this process may make them, else rlimits only. */
type LimitMechanism = { readonly kind: "cgroup-v1"; readonly memory: string; readonly pids: string } | { readonly kind: "cgroup-v2"; readonly root: string } | { readonly kind: "rlimits" }

/** One running sandbox process: a Python interpreter under bubblewrap, asked one thing at a time. */
export interface SandboxProcess {
  readonly pid: number
  /** Runs code; `onOutput` is given what it prints while it runs (the answer has it all, up to its cap). */
  readonly execute: (code: string, timeoutMs: number, onOutput?: OutputListener) => Effect.Effect<ExecuteResult, SandboxProcessEnded>
  /** Saves its globals, name by name, and its work directory to `storageDir`, then ends the process; the names that could not be saved. */
  readonly snapshot: (storageDir: string) => Effect.Effect<{ readonly unpicklable: ReadonlyArray<string>; readonly bytes: number }, SandboxProcessEnded>
  /** Ends the process and removes its directories. */
  readonly stop: Effect.Effect<void>
  /** Whether the process is still there. */
  readonly alive: () => boolean
}

/** A Jupyter server for one notebook session, under the same isolation as a sandbox, serving HTTP on a Unix socket. */
export interface NotebookProcess {
  /** Jupyter's socket, as this host sees it. */
  readonly socketPath: string
  readonly alive: () => boolean
  readonly stop: Effect.Effect<void>
  /** Resolves, with why, once the process has ended. */
  readonly ended: Promise<string>
  /** The disk its work folder (and its server's socket folder) take, counted up to just past its quota. */
  readonly workBytes: Effect.Effect<number>
}

/** The most an answer of the runner other than an execute's takes (a snapshot's list of names). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024

const RunnerFailure = Schema.Struct({ failed: Schema.String })
const Names = Schema.Array(Schema.String.pipe(Schema.maxLength(1000))).pipe(Schema.maxItems(100_000))
const SnapshotAnswer = Schema.Struct({ saved: Names, unpicklable: Names, bytes: Schema.NonNegativeInt })
const RestoreAnswer = Schema.Struct({ restored: Names, unpicklable: Names })
/** An execute's answer, its output no longer than the runner keeps. */
const executeAnswer = (outputChars: number) => {
  const Output = Schema.String.pipe(Schema.maxLength(outputChars))
  return Schema.Struct({ success: Schema.Boolean, stdout: Output, stderr: Output, error: Schema.NullOr(Schema.String.pipe(Schema.maxLength(outputChars))), execution_ms: Schema.NonNegative, truncated: Schema.Boolean })
}
const MAX_DATA_REQUEST = 1024 * 1024
/** A sandbox's code that ignores its timeout is ended this long after it. */
const HARD_DEADLINE_GRACE_MS = 2000
const READY_TIMEOUT_MS = 10_000
const DISK_CHECK_MS = 1000
const NOTEBOOK_READY_TIMEOUT_MS = 30_000
const SLOTS = 10
const UID_BASE = 62_000
const PYTHON_DIR = path.join(PACKAGE_ROOT, "layers", "sandbox", "python")

const run = promisify(execFile)

/**
 * Length-prefixed JSON messages (4-byte big-endian length) read from a stream, one at a time in
 * order; chunks are joined once a message is whole. The code in a sandbox can write on this pipe
 * too: bytes while no answer is awaited, or an answer longer than `maxBytes`, are `onBad`.
 */
const messageReader = (stream: NodeJS.ReadableStream, maxBytes: number, awaited: () => boolean, onMessage: (message: unknown) => void, onBad: (why: string) => void) => {
  let chunks: Array<Buffer> = []
  let held = 0
  let failed = false
  stream.on("data", (chunk: Buffer) => {
    if (failed) return
    if (!awaited()) {
      failed = true
      return onBad("the sandbox's interpreter sent an unasked answer")
    }
    chunks.push(chunk)
    held += chunk.length
    while (held >= 4) {
      const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, held)
      chunks = [whole]
      const length = whole.readUInt32BE(0)
      if (length > maxBytes) {
        failed = true
        return onBad("the sandbox's interpreter sent a malformed answer (too long)")
      }
      if (held < 4 + length) return
      const body = whole.subarray(4, 4 + length)
      const rest = whole.subarray(4 + length)
      chunks = rest.length === 0 ? [] : [rest]
      held = rest.length
      let message: unknown
      try {
        message = JSON.parse(body.toString("utf8"))
      } catch {
        failed = true
        return onBad("the sandbox's interpreter sent a malformed answer")
      }
      onMessage(message)
      if (held > 0 && !awaited()) {
        failed = true
        return onBad("the sandbox's interpreter sent an unasked answer")
      }
    }
  })
}

const framed = (message: unknown) => {
  const body = Buffer.from(JSON.stringify(message), "utf8")
  const header = Buffer.alloc(4)
  header.writeUInt32BE(body.length, 0)
  return Buffer.concat([header, body])
}

const writable = (file: string) => {
  try {
    fs.accessSync(file, fs.constants.W_OK)
    return true
  } catch {
    return false
  }
}

const probeMechanism = (): LimitMechanism => {
  if (process.getuid?.() !== 0) return { kind: "rlimits" }
  if (fs.existsSync("/sys/fs/cgroup/cgroup.controllers")) {
    const controllers = fs.readFileSync("/sys/fs/cgroup/cgroup.controllers", "utf8")
    if (controllers.includes("memory") && controllers.includes("pids") && writable("/sys/fs/cgroup")) {
      const root = "/sys/fs/cgroup/sluice"
      try {
        fs.mkdirSync(root, { recursive: true })
        fs.writeFileSync("/sys/fs/cgroup/cgroup.subtree_control", "+memory +pids")
        return { kind: "cgroup-v2", root }
      } catch {
        return { kind: "rlimits" }
      }
    }
    return { kind: "rlimits" }
  }
  const memory = "/sys/fs/cgroup/memory/sluice"
  const pids = "/sys/fs/cgroup/pids/sluice"
  try {
    if (!writable("/sys/fs/cgroup/memory") || !writable("/sys/fs/cgroup/pids")) return { kind: "rlimits" }
    fs.mkdirSync(memory, { recursive: true })
    fs.mkdirSync(pids, { recursive: true })
    return { kind: "cgroup-v1", memory, pids }
  } catch {
    return { kind: "rlimits" }
  }
}

/** The cgroups of one sandbox process, made with its limits; and how to tell it was killed for memory, and remove them. */
const cgroupsFor = (mechanism: LimitMechanism, name: string, limits: SandboxLimits) => {
  const bytes = String(limits.memoryMb * 1024 * 1024)
  if (mechanism.kind === "cgroup-v1") {
    const memory = path.join(mechanism.memory, name)
    const pids = path.join(mechanism.pids, name)
    fs.mkdirSync(memory)
    fs.mkdirSync(pids)
    fs.writeFileSync(path.join(memory, "memory.limit_in_bytes"), bytes)
    // Swap counts too where the kernel accounts it: the limit is the limit.
    if (fs.existsSync(path.join(memory, "memory.memsw.limit_in_bytes"))) fs.writeFileSync(path.join(memory, "memory.memsw.limit_in_bytes"), bytes)
    fs.writeFileSync(path.join(pids, "pids.max"), String(limits.processes))
    return {
      dirs: [memory, pids],
      outOfMemory: () => /oom_kill [1-9]/.test(safeRead(path.join(memory, "memory.oom_control"))) || readNumber(path.join(memory, "memory.failcnt")) > 0,
      killAll: () => killCgroups([memory, pids]),
      remove: () => removeCgroups([memory, pids])
    }
  }
  if (mechanism.kind === "cgroup-v2") {
    const dir = path.join(mechanism.root, name)
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, "memory.max"), bytes)
    if (fs.existsSync(path.join(dir, "memory.swap.max"))) fs.writeFileSync(path.join(dir, "memory.swap.max"), "0")
    fs.writeFileSync(path.join(dir, "pids.max"), String(limits.processes))
    return {
      dirs: [dir],
      outOfMemory: () => /oom_kill [1-9]/.test(safeRead(path.join(dir, "memory.events"))),
      killAll: () => killCgroups([dir]),
      remove: () => removeCgroups([dir])
    }
  }
  return { dirs: [], outOfMemory: () => false, killAll: async () => {}, remove: () => {} }
}

const safeRead = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8")
  } catch {
    return ""
  }
}
const readNumber = (file: string) => Number(safeRead(file).trim() || "0")

const pidsIn = (dirs: ReadonlyArray<string>) => dirs.flatMap((dir) => safeRead(path.join(dir, "cgroup.procs")).split("\n").filter(Boolean))

/** Kills every process in the cgroups and waits (up to 2 s) until none is left: nothing of a sandbox runs while its files are copied. */
const killCgroups = async (dirs: ReadonlyArray<string>) => {
  for (let attempt = 0; attempt < 200; attempt++) {
    const left = pidsIn(dirs)
    if (left.length === 0) return
    for (const pid of left) {
      try {
        process.kill(Number(pid), "SIGKILL")
      } catch {}
    }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error("the sandbox's processes did not end")
}

/** Kills what is left in the cgroups (a child that outlived the interpreter), then removes them. */
const removeCgroups = (dirs: ReadonlyArray<string>) => {
  for (const dir of dirs) {
    for (const pid of safeRead(path.join(dir, "cgroup.procs")).split("\n").filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL")
      } catch {}
    }
  }
  for (const dir of dirs) {
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        fs.rmdirSync(dir)
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") break
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10)
      }
    }
  }
}

/**
 * Copies a sandbox's files as they are, once nothing of it runs: directories, regular files (opened
 * without following a link, their setuid and setgid bits dropped) and links (copied as links, never
 * followed); FIFOs, sockets and devices are left out. Asynchronous, so a large copy holds up nothing else.
 */
const copyTree = async (from: string, to: string): Promise<void> => {
  await fsp.mkdir(to)
  for (const entry of await fsp.readdir(from)) {
    const source = path.join(from, entry)
    const target = path.join(to, entry)
    const stat = await fsp.lstat(source)
    if (stat.isDirectory()) await copyTree(source, target)
    else if (stat.isSymbolicLink()) await fsp.symlink(await fsp.readlink(source), target)
    else if (stat.isFile()) await copyRegularFile(source, target)
    else continue
    if (!stat.isSymbolicLink()) await fsp.utimes(target, stat.atime, stat.mtime)
  }
}

/** Copies a file a sandbox wrote only if it is a regular file: the gateway never follows a link a sandbox made. */
const copyRegularFile = async (from: string, to: string) => {
  const source = await fsp.open(from, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  try {
    const stat = await source.stat()
    if (!stat.isFile()) throw new Error("not a regular file")
    // The opened file itself, by its descriptor: no path is resolved again, and the kernel copies it (copy_file_range).
    await fsp.copyFile(`/proc/self/fd/${source.fd}`, to, fs.constants.COPYFILE_EXCL)
    await fsp.chmod(to, (stat.mode & 0o755) | 0o600)
  } finally {
    await source.close()
  }
}

const CHOWNS_AT_ONCE = 64

/**
 * Gives `dir` and everything in it to `uid`, off the event loop (a notebook folder can hold many
 * thousands of files). A folder already its own was last used by the same uid, whose files all are.
 */
const chownTree = async (dir: string, uid: number) => {
  if ((await fs.promises.lstat(dir)).uid === uid) return
  const entries = await fs.promises.readdir(dir, { withFileTypes: true, recursive: true })
  for (let i = 0; i < entries.length; i += CHOWNS_AT_ONCE) {
    await Promise.all(entries.slice(i, i + CHOWNS_AT_ONCE).map((entry) => fs.promises.lchown(path.join(entry.parentPath, entry.name), uid, uid)))
  }
  // The folder itself last: until every file in it is the uid's, it says it is not.
  await fs.promises.chown(dir, uid, uid)
}

/**
 * Sandbox processes on this host: Debian's Python (`SP_PYTHON`) under bubblewrap with its own
 * user, PID, network, IPC, UTS and mount namespaces, a read-only system, a private work directory
 * and `/tmp`, no environment, no capabilities, a uid of its own (as root), and limits on memory
 * and processes (cgroups where this process may make them, else rlimits), CPU time, open files,
 * file size and output. The one way out is a Unix socket to the gateway, answered by the
 * handler its starter gives. At most ten run at once.
 */
export class SandboxProcesses extends Effect.Service<SandboxProcesses>()("sluice/SandboxProcesses", {
  scoped: Effect.gen(function* () {
    const config = yield* AppConfig
    const python = config.sandboxPython
    const asRoot = process.getuid?.() === 0
    const runtimeRoot = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-sandboxes-"))
        // Slot uids pass through to their own directories; they cannot list this one.
        fs.chmodSync(dir, 0o711)
        return dir
      }),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const identityFiles = path.join(runtimeRoot, "etc")
    // Modes are set after each creation: the embedded store's umask (077) would take them away.
    fs.mkdirSync(identityFiles)
    fs.chmodSync(identityFiles, 0o755)
    fs.writeFileSync(path.join(identityFiles, "passwd"), "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:1000:1000:sandbox:/work:/usr/sbin/nologin\n")
    fs.writeFileSync(path.join(identityFiles, "group"), "root:x:0:\nsandbox:x:1000:\n")
    for (const file of ["passwd", "group"]) fs.chmodSync(path.join(identityFiles, file), 0o644)
    // The runner and the `sluice` module, copied where a sandbox's uid can read them (the package may sit in a folder only root may enter).
    const pythonDir = path.join(runtimeRoot, "python")
    fs.mkdirSync(pythonDir)
    fs.chmodSync(pythonDir, 0o755)
    for (const file of fs.readdirSync(PYTHON_DIR).filter((name) => name.endsWith(".py"))) {
      fs.copyFileSync(path.join(PYTHON_DIR, file), path.join(pythonDir, file))
      fs.chmodSync(path.join(pythonDir, file), 0o644)
    }
    const free = new Set<number>(Array.from({ length: SLOTS }, (_, slot) => slot))
    // Notebook servers have slots (and uids) of their own, after the sandboxes'.
    const freeNotebooks = new Set<number>(Array.from({ length: SLOTS }, (_, slot) => SLOTS + slot))
    const notebooks = new Set<NotebookProcess>()
    const live = new Set<SandboxProcess>()
    let mechanism: LimitMechanism | undefined

    yield* Effect.addFinalizer(() => Effect.forEach([...live, ...notebooks], (sandbox) => sandbox.stop, { discard: true }))

    /** Whether sandboxes can run here, asked once: bubblewrap and the interpreter answer a trivial run. */
    const available = yield* Effect.cached(
      Effect.tryPromise({
        try: async () => {
          const bwrap = "/usr/bin/bwrap"
          if (!fs.existsSync(bwrap)) throw new Error("bubblewrap is not installed (apt-get install bubblewrap)")
          if (!fs.existsSync(python)) throw new Error(`the sandbox interpreter ${python} does not exist (SP_PYTHON; apt-get install python3)`)
          await run(bwrap, ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", python, "-I", "-c", "pass"], { env: {}, timeout: 10_000 })
          mechanism = probeMechanism()
        },
        catch: (error) =>
          new SandboxesUnavailable({
            message: `Sandboxes cannot run on this host: ${error instanceof Error && /bubblewrap|interpreter/.test(error.message) ? error.message : "bubblewrap could not start a sandbox (user namespaces may be disabled)"}`
          })
      })
    )

    /** Runs `launch` in a free slot of `slots` (given back if it fails), its failure logged with what the process wrote and told as `what` did not start. */
    const inSlot = <A>(slots: Set<number>, what: string, launch: (slot: number) => Promise<A>) =>
      Effect.gen(function* () {
        yield* available
        const slot = slots.values().next().value
        if (slot === undefined) return yield* new NoFreeSlot({ slots: SLOTS })
        slots.delete(slot)
        return yield* Effect.tryPromise({ try: () => launch(slot), catch: (error) => error }).pipe(
          Effect.catchAll((error) =>
            Effect.zipRight(
              Effect.logWarning(`a ${what} did not start`, error instanceof SandboxStartFailure ? error.diagnostics : String(error)),
              Effect.fail(new SandboxProcessEnded({ reason: error instanceof SandboxStartFailure ? error.message : `the ${what} did not start` }))
            )
          ),
          Effect.tapError(() => Effect.sync(() => slots.add(slot)))
        )
      })

    /**
     * Starts a sandbox process, its work directory a copy of `from`'s (a snapshot's storage) when
     * given, its globals restored from there too; `onData` answers its governed requests.
     */
    const start = (options: { readonly limits: SandboxLimits; readonly token: string; readonly onData: DataRequestHandler; readonly from?: string }) =>
      inSlot(free, "sandbox process", (slot) => launch(slot, options))

    /** A sandbox's run directory and the gateway's socket in it, with the token its `sluice` module sends. */
    const prepareRun = async (home: string, uid: number, token: string, onData: DataRequestHandler) => {
      const runDir = path.join(home, "run")
      fs.mkdirSync(runDir)
      fs.chmodSync(runDir, 0o750)
      fs.writeFileSync(path.join(runDir, "token"), token)
      fs.chmodSync(path.join(runDir, "token"), 0o640)
      if (asRoot) {
        fs.chownSync(runDir, 0, uid)
        fs.chownSync(path.join(runDir, "token"), 0, uid)
      }
      const socketPath = path.join(runDir, "gateway.sock")
      const dataServer = serveData(onData)
      await new Promise<void>((resolve, reject) => {
        dataServer.once("error", reject)
        dataServer.listen(socketPath, () => resolve())
      })
      fs.chmodSync(socketPath, 0o660)
      if (asRoot) fs.chownSync(socketPath, 0, uid)
      return { runDir, dataServer }
    }

    /** A home of its own for one launch, in the runtime directory. */
    const makeHome = () => {
      const launchId = randomUUID()
      const home = path.join(runtimeRoot, launchId)
      fs.mkdirSync(home)
      fs.chmodSync(home, 0o711)
      return { launchId, home }
    }

    /** A directory of the sandbox's own, writable by its uid alone. */
    const ownDirectory = async (dir: string, uid: number) => {
      await fs.promises.mkdir(dir, { recursive: true })
      if (asRoot) await chownTree(dir, uid)
      await fs.promises.chmod(dir, 0o700)
    }

    /**
     * Spawns `program` under bubblewrap as the slot's uid, in the cgroups made for it: the isolation
     * every sandbox shares, its own binds and environment added. Its fds from 3 on are `fds`.
     */
    const spawnIsolated = (
      uid: number,
      limits: SandboxLimits,
      cgroups: ReturnType<typeof cgroupsFor>,
      runDir: string,
      program: { readonly argv: ReadonlyArray<string>; readonly env: Readonly<Record<string, string>>; readonly binds: ReadonlyArray<string>; readonly fds: ReadonlyArray<number | "pipe"> }
    ) => {
      const rlimits = [
        `--cpu=${limits.cpuSeconds}`,
        `--nofile=${limits.openFiles}`,
        `--fsize=${limits.fileMb * 1024 * 1024}`,
        `--core=0`,
        // Without a cgroup: the address space stands in for memory, processes per uid for the pids controller.
        ...(cgroups.dirs.length === 0 ? [`--as=${limits.memoryMb * 1024 * 1024}`, `--nproc=${limits.processes}`] : [`--nproc=${limits.processes * 4}`])
      ]
      const env = { HOME: "/work", PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8", OPENBLAS_NUM_THREADS: "1", MPLBACKEND: "Agg", ...program.env }
      const bwrapArgs = [
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        "--clearenv",
        ...Object.entries(env).flatMap(([name, value]) => ["--setenv", name, value]),
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/sbin", "/sbin",
        "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
        "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
        "--ro-bind-try", "/etc/localtime", "/etc/localtime",
        "--ro-bind-try", "/etc/python3", "/etc/python3",
        "--ro-bind-try", "/etc/python3.11", "/etc/python3.11",
        "--ro-bind", path.join(identityFiles, "passwd"), "/etc/passwd",
        "--ro-bind", path.join(identityFiles, "group"), "/etc/group",
        "--proc", "/proc",
        "--dev", "/dev",
        "--size", String(limits.tmpMb * 1024 * 1024),
        "--tmpfs", "/tmp",
        ...program.binds,
        "--ro-bind", runDir, "/run/sluice",
        "--ro-bind", pythonDir, "/opt/sluice",
        "--remount-ro", "/",
        "--chdir", "/work",
        ...program.argv
      ]
      const command = [
        ...(asRoot ? ["/usr/bin/setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"] : []),
        // bwrap's own environment is what /proc/1/environ shows inside: none.
        "/usr/bin/env",
        "-i",
        "/usr/bin/prlimit",
        ...rlimits,
        "--",
        "/usr/bin/bwrap",
        ...bwrapArgs
      ]
      // The shell joins the cgroups before anything of the sandbox runs, then becomes it.
      const script = `for dir in ${cgroups.dirs.map((_, i) => `"$${i + 1}"`).join(" ")}; do echo $$ > "$dir/cgroup.procs" || exit 97; done; shift ${cgroups.dirs.length}; exec "$@"`
      return spawn("/bin/sh", ["-c", script, "sh", ...cgroups.dirs, ...command], {
        env: {},
        stdio: ["ignore", "pipe", "pipe", ...program.fds],
        cwd: "/",
        detached: true
      })
    }

    const launch = async (slot: number, options: { readonly limits: SandboxLimits; readonly token: string; readonly onData: DataRequestHandler; readonly from?: string }) => {
      const { limits } = options
      const uid = asRoot ? UID_BASE + slot : (process.getuid?.() ?? 0)
      const { launchId, home } = makeHome()
      const work = path.join(home, "work")
      const state = path.join(home, "state")
      if (options.from !== undefined && fs.existsSync(path.join(options.from, "work"))) await copyTree(path.join(options.from, "work"), work)
      await ownDirectory(work, uid)
      fs.mkdirSync(state)
      const restoring = options.from !== undefined && fs.existsSync(path.join(options.from, "globals.pickle"))
      if (restoring) await copyRegularFile(path.join(options.from!, "globals.pickle"), path.join(state, "globals.pickle"))
      await ownDirectory(state, uid)
      const { runDir, dataServer } = await prepareRun(home, uid, options.token, options.onData)
      const cgroups = cgroupsFor(mechanism ?? { kind: "rlimits" }, launchId, limits)
      const child = spawnIsolated(uid, limits, cgroups, runDir, {
        argv: [python, "-I", "/opt/sluice/runner.py"],
        env: {},
        binds: ["--bind", work, "/work", "--bind", state, "/state"],
        fds: ["pipe", "pipe"]
      })
      return connect(child, { home, work, cgroups, dataServer, slot, restoring, limits })
    }

    /**
     * Starts a Jupyter server (Debian's jupyter_server with nbclassic and ipykernel) under the same
     * isolation, in `workDir` (kept across sessions; its parents must let the sandbox's uid through),
     * serving `baseUrl` on a Unix socket with `jupyterToken`; its
     * kernels' `sluice` module reaches the gateway as a sandbox's does.
     */
    const startNotebook = (options: {
      readonly limits: SandboxLimits
      readonly token: string
      readonly onData: DataRequestHandler
      readonly workDir: string
      readonly jupyterToken: string
      readonly baseUrl: string
    }) => inSlot(freeNotebooks, "notebook server", (slot) => launchNotebook(slot, options))

    const launchNotebook = async (slot: number, options: Parameters<typeof startNotebook>[0]) => {
      const { limits } = options
      const uid = asRoot ? UID_BASE + slot : (process.getuid?.() ?? 0)
      const { launchId, home } = makeHome()
      await ownDirectory(options.workDir, uid)
      const jupyterDir = path.join(home, "jupyter")
      await ownDirectory(jupyterDir, uid)
      const { runDir, dataServer } = await prepareRun(home, uid, options.token, options.onData)
      const cgroups = cgroupsFor(mechanism ?? { kind: "rlimits" }, launchId, limits)
      const child = spawnIsolated(uid, limits, cgroups, runDir, {
        // Isolated (-I): the server imports nothing from its work folder or PYTHON* settings (its kernels, the user's code, still do).
        argv: [
          python,
          "-I",
          "-m",
          "jupyter_server",
          "--sock=/run/jupyter/server.sock",
          "--sock-mode=0600",
          "--no-browser",
          "--ServerApp.root_dir=/work",
          // A deleted file goes, rather than to a trash folder inside the work folder (where it would still count against the disk quota).
          "--FileContentsManager.delete_to_trash=False",
          // A terminal is a shell no kernel rule (the disk quota's refusals) would reach.
          "--ServerApp.terminals_enabled=False",
          `--ServerApp.base_url=${options.baseUrl}`,
          "--ServerApp.open_browser=False"
        ],
        env: {
          JUPYTER_TOKEN: options.jupyterToken,
          PYTHONPATH: "/opt/sluice",
          JUPYTER_RUNTIME_DIR: "/tmp/jupyter-runtime",
          JUPYTER_DATA_DIR: "/tmp/jupyter-data",
          JUPYTER_CONFIG_DIR: "/tmp/jupyter-config",
          IPYTHONDIR: "/tmp/ipython"
        },
        binds: ["--bind", options.workDir, "/work", "--bind", jupyterDir, "/run/jupyter", "--ro-bind-try", "/etc/jupyter", "/etc/jupyter"],
        fds: []
      })
      let diagnostics = ""
      for (const stream of [child.stdout, child.stderr]) stream?.on("data", (chunk: Buffer) => (diagnostics = (diagnostics + chunk.toString("utf8")).slice(-4000)))
      let exited = false
      let endedBy: string | undefined
      const socketPath = path.join(jupyterDir, "server.sock")
      const kill = (reason: string) => {
        endedBy ??= reason
        if (child.pid !== undefined && !exited) {
          try {
            process.kill(-child.pid, "SIGKILL")
          } catch {}
        }
      }
      const ended = new Promise<string>((resolve) =>
        child.on("exit", (code) => {
          exited = true
          dataServer.close()
          const outOfMemory = cgroups.outOfMemory()
          cgroups.remove()
          fs.rmSync(home, { recursive: true, force: true })
          freeNotebooks.add(slot)
          notebooks.delete(notebook)
          resolve(endedBy ?? (outOfMemory ? `the notebook server was killed: it went over its memory limit of ${limits.memoryMb} MiB` : `the notebook server ended (exit code ${code})`))
        })
      )
      child.on("error", () => kill("the notebook server could not be started"))
      const notebook: NotebookProcess = {
        socketPath,
        alive: () => !exited && endedBy === undefined,
        ended,
        stop: Effect.promise(() => {
          kill("the notebook session was stopped")
          return ended
        }).pipe(Effect.asVoid),
        // Its socket's folder is the host's disk too.
        workBytes: Effect.promise(async () => (await diskBytes(options.workDir, limits.diskMb * 1024 * 1024)) + (await diskBytes(jupyterDir, limits.diskMb * 1024 * 1024)))
      }
      notebooks.add(notebook)
      const deadline = Date.now() + NOTEBOOK_READY_TIMEOUT_MS
      while (!(await jupyterAnswers(socketPath, `${options.baseUrl}api/status`, options.jupyterToken))) {
        if (exited || Date.now() > deadline) {
          kill("the notebook server did not start within 30 s")
          await ended
          throw new SandboxStartFailure("the notebook server did not start", diagnostics)
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      return notebook
    }

    const connect = (
      child: ChildProcess,
      parts: {
        readonly home: string
        readonly work: string
        readonly cgroups: ReturnType<typeof cgroupsFor>
        readonly dataServer: net.Server
        readonly slot: number
        readonly restoring: boolean
        readonly limits: SandboxLimits
      }
    ) =>
      new Promise<SandboxProcess>((resolve, reject) => {
        const requests = child.stdio[3] as net.Socket
        const answers = child.stdio[4] as net.Socket
        // What the process wrote outside its captured output (a C extension, a child process): drained, the last of it kept to explain a crash.
        let diagnostics = ""
        for (const stream of [child.stdout, child.stderr]) stream?.on("data", (chunk: Buffer) => (diagnostics = (diagnostics + chunk.toString("utf8")).slice(-2000)))
        let waiting: { resolve: (message: any) => void; reject: (ended: SandboxProcessEnded) => void } | undefined
        let outOfMemory = false
        // Who hears the output of the execute under way, when it runs live.
        let listening: OutputListener | undefined
        let endedBy: string | undefined
        let exited = false
        let released = false
        let holdFiles = false
        const release = () => {
          if (released) return
          released = true
          parts.dataServer.close()
          parts.cgroups.remove()
          fs.rmSync(parts.home, { recursive: true, force: true })
          free.add(parts.slot)
          live.delete(sandbox)
        }
        const kill = (reason: string) => {
          endedBy ??= reason
          if (child.pid !== undefined && !exited) {
            try {
              process.kill(-child.pid, "SIGKILL")
            } catch {}
          }
        }
        child.on("exit", (code, signal) => {
          exited = true
          outOfMemory = endedBy === undefined && parts.cgroups.outOfMemory()
          const reason =
            endedBy ??
            (outOfMemory
              ? `the sandbox was killed: it went over its memory limit of ${parts.limits.memoryMb} MiB`
              : signal === "SIGXCPU" || code === 128 + 24
                ? `the sandbox was killed: it used its ${parts.limits.cpuSeconds} s of CPU time`
                : signal === "SIGKILL" || code === 128 + 9
                  ? "the sandbox was killed (SIGKILL)"
                  : code === 97
                    ? "the sandbox could not join its cgroups"
                    : `the sandbox's interpreter ended (exit code ${code ?? signal})`)
          endedBy = reason
          waiting?.reject(new SandboxProcessEnded({ reason, outOfMemory }))
          waiting = undefined
          if (!holdFiles) release()
        })
        child.on("error", () => kill("the sandbox process could not be started"))
        messageReader(
          answers,
          Math.max(MAX_ANSWER_BYTES, parts.limits.outputChars * 12 + MAX_ANSWER_BYTES),
          () => waiting !== undefined,
          (message) => {
            const piece = listening === undefined ? undefined : outputPiece(message)
            if (piece !== undefined) return listening?.(piece.stream, piece.text)
            const current = waiting
            waiting = undefined
            current?.resolve(message)
          },
          kill
        )
        const ask = (message: unknown, deadlineMs: number) =>
          new Promise<any>((resolveAnswer, rejectAnswer) => {
            if (exited || endedBy !== undefined) return rejectAnswer(new SandboxProcessEnded({ reason: endedBy ?? "the sandbox process has ended", outOfMemory }))
            waiting = { resolve: resolveAnswer, reject: rejectAnswer }
            const timer = setTimeout(() => kill(`the sandbox was stopped: its code ran ${Math.round(deadlineMs / 1000)} s and did not stop at its timeout`), deadlineMs)
            const clear = () => clearTimeout(timer)
            waiting = {
              resolve: (answer) => (clear(), resolveAnswer(answer)),
              reject: (ended) => (clear(), rejectAnswer(ended))
            }
            requests.write(framed(message))
          })
        /** Asks the runner and checks its answer: the code can forge one (it shares the runner's interpreter), and a forged one ends the sandbox. */
        const asked = <A, I>(message: unknown, deadlineMs: number, answer: Schema.Schema<A, I>) =>
          Effect.tryPromise({ try: () => ask(message, deadlineMs), catch: (error) => (error instanceof SandboxProcessEnded ? error : new SandboxProcessEnded({ reason: "the sandbox process failed" })) }).pipe(
            Effect.flatMap((raw) => {
              const failed = Schema.decodeUnknownOption(RunnerFailure)(raw)
              if (Option.isSome(failed)) return Effect.fail(new SandboxProcessEnded({ reason: `the sandbox's interpreter failed: ${failed.value.failed.slice(0, 500)}` }))
              const decoded = Schema.decodeUnknownOption(answer)(raw)
              if (Option.isSome(decoded)) return Effect.succeed(decoded.value)
              const reason = "the sandbox was stopped: its interpreter sent a malformed answer"
              kill(reason)
              return Effect.fail(new SandboxProcessEnded({ reason }))
            })
          )
        /** Ends the process and waits for its end; its files are removed then, unless `keepFiles` (the caller removes them). */
        const end = (keepFiles: boolean) =>
          Effect.async<void>((resume) => {
            if (keepFiles) holdFiles = true
            if (exited) {
              if (!keepFiles) release()
              return resume(Effect.void)
            }
            child.once("exit", () => resume(Effect.void))
            kill("the sandbox was stopped")
          })
        const stop = end(false)
        const sandbox: SandboxProcess = {
          pid: child.pid ?? -1,
          alive: () => !exited && endedBy === undefined,
          execute: (code, timeoutMs, onOutput) => {
            const quota = parts.limits.diskMb * 1024 * 1024
            let checking: Promise<void> | undefined
            const overQuota = () =>
              (checking ??= diskBytes(parts.work, quota).then((bytes) => {
                checking = undefined
                if (bytes > quota) kill(`the sandbox was stopped: its work directory went over its ${parts.limits.diskMb} MiB disk quota`)
              }))
            return Effect.acquireUseRelease(
              Effect.sync(() => {
                listening = onOutput
                return setInterval(overQuota, DISK_CHECK_MS)
              }),
              () =>
                asked(
                  { op: "execute", code, timeout_ms: timeoutMs, output_cap: parts.limits.outputChars, live: onOutput !== undefined },
                  timeoutMs + HARD_DEADLINE_GRACE_MS,
                  executeAnswer(parts.limits.outputChars)
                ),
              (timer) =>
                Effect.promise(async () => {
                  listening = undefined
                  clearInterval(timer)
                  // Written faster than the checks: the process ends now, and its next call says why.
                  await checking
                  await overQuota()
                })
            )
          },
          snapshot: (storageDir) =>
            Effect.gen(function* () {
              const saved = yield* asked({ op: "snapshot" }, 120_000, SnapshotAnswer)
              // Copied once the process is gone, so nothing it runs can swap a file for a link to a host file while the gateway reads.
              yield* end(true)
              const copied = yield* Effect.tryPromise(async () => {
                await parts.cgroups.killAll()
                await fsp.rm(storageDir, { recursive: true, force: true })
                await fsp.mkdir(storageDir, { recursive: true })
                await fsp.chmod(storageDir, 0o700)
                await copyTree(parts.work, path.join(storageDir, "work"))
                await copyRegularFile(path.join(parts.home, "state", "globals.pickle"), path.join(storageDir, "globals.pickle"))
              }).pipe(Effect.either, Effect.ensuring(Effect.sync(release)))
              if (copied._tag === "Left") {
                yield* Effect.sync(() => fs.rmSync(storageDir, { recursive: true, force: true }))
                return yield* new SandboxProcessEnded({ reason: "its files could not be saved" })
              }
              return { unpicklable: saved.unpicklable, bytes: saved.bytes }
            }),
          stop
        }
        live.add(sandbox)
        const startTimer = setTimeout(() => kill("the sandbox did not start within 10 s"), READY_TIMEOUT_MS)
        waiting = {
          resolve: (ready) => {
            clearTimeout(startTimer)
            if (ready?.ready !== true) return reject(new SandboxStartFailure("the sandbox's interpreter did not start"))
            if (!parts.restoring) return resolve(sandbox)
            Effect.runPromise(asked({ op: "restore" }, 120_000, RestoreAnswer)).then(
              () => resolve(sandbox),
              (error) => {
                kill("the sandbox's state could not be restored")
                reject(new SandboxStartFailure(error instanceof SandboxProcessEnded ? error.reason : "the sandbox's state could not be restored"))
              }
            )
          },
          reject: (ended) => {
            clearTimeout(startTimer)
            reject(new SandboxStartFailure(ended.reason, diagnostics))
          }
        }
      })

    // Which gateway holds the processes, across its restarts: the host and its data dir (the records of what it held are settled at its next start).
    const holder = `${os.hostname()}:${config.dataDir}`.slice(0, 500)

    return { available, start, startNotebook, holder } as const
  }),
  dependencies: [AppConfig.Default]
}) {}

/** Whether the Jupyter server on `socketPath` answers `route` with 200. */
const jupyterAnswers = (socketPath: string, route: string, token: string) =>
  new Promise<boolean>((resolve) => {
    if (!fs.existsSync(socketPath)) return resolve(false)
    const request = http.get({ socketPath, path: route, headers: { authorization: `token ${token}` }, timeout: 2000 }, (response) => {
      response.resume()
      resolve(response.statusCode === 200)
    })
    request.on("error", () => resolve(false))
    request.on("timeout", () => request.destroy())
  })

class SandboxStartFailure extends Error {
  constructor(
    message: string,
    /** What the process wrote before it ended: for the gateway's log, never the caller (it names host paths). */
    readonly diagnostics = ""
  ) {
    super(message)
  }
}

/** Connections a sandbox's code may hold open to the gateway at once, and how long one may take to send its request whole. */
const DATA_CONNECTIONS = 4
const DATA_REQUEST_DEADLINE_MS = 5_000

/**
 * The gateway's end of a sandbox's socket: one length-prefixed JSON request per connection,
 * answered by `handler`; at most a few connections at once (the rest are closed), each sending its
 * request whole within a few seconds, so no sandbox holds the gateway's memory.
 */
const serveData = (handler: DataRequestHandler) => {
  const server = net.createServer((socket) => {
    let chunks: Array<Buffer> = []
    let held = 0
    let answered = false
    const deadline = setTimeout(() => socket.destroy(), DATA_REQUEST_DEADLINE_MS)
    socket.on("close", () => clearTimeout(deadline))
    socket.on("error", () => socket.destroy())
    const answer = (message: unknown) => {
      answered = true
      clearTimeout(deadline)
      socket.end(framed(message))
    }
    socket.on("data", (chunk: Buffer) => {
      if (answered) return
      chunks.push(chunk)
      held += chunk.length
      if (held < 4) return
      const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, held)
      chunks = [whole]
      const length = whole.readUInt32BE(0)
      if (length > MAX_DATA_REQUEST) return answer({ error: { code: "payload_too_large", message: `a request from the sandbox may be at most ${MAX_DATA_REQUEST} bytes` } })
      if (held < 4 + length) return
      answered = true
      clearTimeout(deadline)
      let request: unknown
      try {
        request = JSON.parse(whole.subarray(4, 4 + length).toString("utf8"))
      } catch {
        return answer({ error: { code: "invalid_request", message: "the request is not JSON" } })
      }
      handler(request).then(
        (reply) => socket.end(framed(reply)),
        () => socket.end(framed({ error: { code: "internal", message: "the gateway could not answer" } }))
      )
    })
  })
  server.maxConnections = DATA_CONNECTIONS
  return server
}
