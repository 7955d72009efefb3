import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { promisify } from "node:util"
import { Effect, Redacted } from "effect"
import type { ProjectFiles } from "../src/domain/DbtProject"
import { REMOTE_HOST } from "../src/domain/EvalConfig"
import type { SetFiles } from "../src/domain/EvalSet"
import { Unavailable } from "../src/domain/Errors"
import { AppConfig } from "./AppConfig"
import { diskBytes } from "./DiskUsage"

const run = promisify(execFile)

// Refuses updates of the refs the gateway names protected, each said on a `remote:` line; writes what it refused where the gateway reads it.
const PRE_RECEIVE = `#!/bin/sh
set -f
status=0
while read -r old new ref; do
  for protected in $SLUICE_PROTECTED_REFS; do
    if [ "$ref" = "$protected" ]; then
      echo "Sluice: \${ref#refs/heads/} is a protected branch of this project; push to another branch" >&2
      [ -n "$SLUICE_PUSH_REPORT" ] && echo "refused $old $new $ref" >> "$SLUICE_PUSH_REPORT"
      status=1
    fi
  done
done
exit $status
`
// Writes the refs a push updated (old → new) where the gateway reads them for the push's audit row.
const POST_RECEIVE = `#!/bin/sh
[ -n "$SLUICE_PUSH_REPORT" ] || exit 0
while read -r old new ref; do
  echo "updated $old $new $ref" >> "$SLUICE_PUSH_REPORT"
done
`
// Smart HTTP only (no file served as it is), objects checked on the way in, partial clones allowed.
const REPOSITORY_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ["http.getanyfile", "false"],
  ["http.uploadpack", "true"],
  ["http.receivepack", "true"],
  ["receive.fsckObjects", "true"],
  ["uploadpack.allowFilter", "true"],
  ["core.logAllRefUpdates", "true"]
]

/** What one git request asks `git http-backend` (CGI): the repository, the rest of its path, and the request's facts. */
export interface BackendRequest {
  readonly repository: string
  readonly pathTail: string
  readonly method: string
  readonly query: string
  readonly contentType: string | undefined
  readonly gitProtocol: string | undefined
  readonly remoteUser: string
  readonly remoteAddress: string
  readonly protectedRefs: ReadonlyArray<string>
  readonly pushReport: string | null
}

/** A fetch of one ref from a git remote over http(s), as the gateway allows it. */
export interface RemoteFetch {
  readonly url: string
  /** A branch, tag or commit; null for the remote's HEAD. */
  readonly ref: string | null
  /** The addresses its host was checked to have: git dials these alone (a name that resolves elsewhere later is not followed). */
  readonly addresses: ReadonlyArray<string>
  /** Sent as HTTP Basic's password. */
  readonly token: Redacted.Redacted<string> | null
  /** What the repository may take on disk; a fetch that would go past it is stopped. */
  readonly maxBytes: number
  readonly timeoutMs: number
}

const SIZE_CHECK_MS = 250

/**
 * Workspace projects' bare repositories under SP_REPOS_DIR (a folder per project, named by its id),
 * and git's own `git http-backend` to serve them, run with an environment of its own (never the
 * gateway's, which holds its secrets) and no system or user git configuration.
 */
export class GitRepositories extends Effect.Service<GitRepositories>()("sluice/GitRepositories", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const root = config.reposDir
    const reports = path.join(root, ".push-reports")
    yield* Effect.promise(() => fs.mkdir(reports, { recursive: true, mode: 0o700 }))
    const gitEnv = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: root, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_TERMINAL_PROMPT: "0", LANG: "C" }
    const unavailable = (what: string) => (cause: unknown) => {
      const detail = cause instanceof Error && "stderr" in cause ? String((cause as { stderr: unknown }).stderr).trim().slice(0, 200) : ""
      return new Unavailable({ message: `The repository could not be ${what}${detail.length > 0 ? `: ${detail.replaceAll(root, "<repos>")}` : ""}` })
    }
    const git = (args: ReadonlyArray<string>, what: string) => Effect.tryPromise({ try: () => run("git", [...args], { env: gitEnv }), catch: unavailable(what) })

    const pathOf = (repository: string) => path.join(root, `${repository}.git`)

    /** A new bare repository whose HEAD is `defaultBranch`, with the gateway's hooks and settings. */
    const create = Effect.fn("GitRepositories.create")(function* (repository: string, defaultBranch: string) {
      const dir = pathOf(repository)
      yield* git(["init", "--quiet", "--bare", `--initial-branch=${defaultBranch}`, dir], "created")
      for (const [key, value] of REPOSITORY_CONFIG) yield* git(["--git-dir", dir, "config", key, value], "created")
      yield* Effect.tryPromise({
        try: async () => {
          await fs.writeFile(path.join(dir, "hooks", "pre-receive"), PRE_RECEIVE, { mode: 0o755 })
          await fs.writeFile(path.join(dir, "hooks", "post-receive"), POST_RECEIVE, { mode: 0o755 })
        },
        catch: unavailable("created")
      })
    })

    /** HEAD (what a clone checks out) names `branch`. */
    const setDefaultBranch = Effect.fn("GitRepositories.setDefaultBranch")(function* (repository: string, branch: string) {
      yield* git(["--git-dir", pathOf(repository), "symbolic-ref", "HEAD", `refs/heads/${branch}`], "changed")
    })

    const remove = Effect.fn("GitRepositories.remove")(function* (repository: string) {
      yield* Effect.tryPromise({ try: () => fs.rm(pathOf(repository), { recursive: true, force: true }), catch: unavailable("deleted") })
    })

    /** A file for one push's hooks to report into. */
    const pushReportFile = () => path.join(reports, `${crypto.randomUUID()}.txt`)

    /** `git http-backend` for one request: its stdin takes the request body, its stdout gives the CGI answer. */
    const backend = (request: BackendRequest): ChildProcess =>
      spawn("git", ["http-backend"], {
        stdio: ["pipe", "pipe", "pipe"],
        env: {
          ...gitEnv,
          GIT_PROJECT_ROOT: root,
          GIT_HTTP_EXPORT_ALL: "1",
          PATH_INFO: `/${request.repository}.git${request.pathTail}`,
          QUERY_STRING: request.query,
          REQUEST_METHOD: request.method,
          REMOTE_USER: request.remoteUser,
          REMOTE_ADDR: request.remoteAddress,
          ...(request.contentType === undefined ? {} : { CONTENT_TYPE: request.contentType }),
          ...(request.gitProtocol === undefined ? {} : { GIT_PROTOCOL: request.gitProtocol }),
          SLUICE_PROTECTED_REFS: request.protectedRefs.join(" "),
          ...(request.pushReport === null ? {} : { SLUICE_PUSH_REPORT: request.pushReport })
        }
      })

    /** A blob's text (`<tree-ish>:<path>`), or null when it is missing or larger than `maxBytes`. */
    const blobText = async (dir: string, object: string, maxBytes: number) => {
      const size = await run("git", ["--git-dir", dir, "cat-file", "-s", object], { env: gitEnv }).then(({ stdout }) => Number(stdout.trim()), () => null)
      if (size === null || size > maxBytes) return null
      const { stdout } = await run("git", ["--git-dir", dir, "cat-file", "blob", object], { env: gitEnv, maxBuffer: maxBytes + 1024 })
      return stdout
    }

    /** The files of `ref`'s tree (under `subdirectory`), read with git itself: nothing is checked out. */
    const treeFiles = (repository: string, ref: string, subdirectory: string): ProjectFiles => {
      const dir = pathOf(repository)
      const base = subdirectory === "" ? "" : `${subdirectory}/`
      const tree = `refs/heads/${ref}:${subdirectory}`
      return {
        list: async () => {
          const { stdout } = await run("git", ["--git-dir", dir, "ls-tree", "-r", "-z", "--name-only", tree], { env: gitEnv, maxBuffer: 64 * 1024 * 1024 })
          return stdout.split("\0").filter((name) => name.length > 0).slice(0, 20_000)
        },
        read: (file, maxBytes) => blobText(dir, `refs/heads/${ref}:${base}${file}`, maxBytes)
      }
    }

    /** The commit a branch, tag or commit id names, or null when it names none. */
    const resolveCommit = (repository: string, ref: string) =>
      Effect.promise(() =>
        run("git", ["--git-dir", pathOf(repository), "rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`], { env: gitEnv }).then(
          ({ stdout }) => (/^[0-9a-f]{40,64}$/.test(stdout.trim()) ? stdout.trim() : null),
          () => null
        )
      )

    /** The files of a commit's folder, with whether each is a plain file (not a link or submodule), read with git itself. */
    const commitFiles = (repository: string, commit: string, folder: string): SetFiles => {
      const dir = pathOf(repository)
      const base = folder === "" ? "" : `${folder}/`
      return {
        list: async () => {
          const { stdout } = await run("git", ["--git-dir", dir, "ls-tree", "-r", "-z", `${commit}:${folder}`], { env: gitEnv, maxBuffer: 64 * 1024 * 1024 })
          return stdout
            .split("\0")
            .filter((line) => line.length > 0)
            .slice(0, 20_000)
            .map((line) => {
              const tab = line.indexOf("\t")
              const [mode] = line.slice(0, tab).split(" ")
              return { path: line.slice(tab + 1), regular: mode === "100644" || mode === "100755" }
            })
        },
        read: (file, maxBytes) => blobText(dir, `${commit}:${base}${file}`, maxBytes)
      }
    }

    /**
     * The commit `remote.ref` names on a git remote, fetched (only it, shallow) into `repository`:
     * over http(s) alone, to the checked addresses alone, no redirect followed, no credential
     * helper or prompt, the token in the environment (never an argument), stopped past its size or
     * time. Why it failed is git's own words, the token never among them.
     */
    const fetchRemote = Effect.fn("GitRepositories.fetchRemote")(function* (repository: string, remote: RemoteFetch) {
      const dir = pathOf(repository)
      // A cache of earlier fetches past half its cap starts again, so fetches of a remote that changes do not pile up.
      if ((yield* Effect.promise(() => diskBytes(dir, remote.maxBytes / 2))) > remote.maxBytes / 2) yield* remove(repository)
      yield* Effect.tryPromise({ try: () => fs.access(path.join(dir, "HEAD")), catch: () => "missing" as const }).pipe(
        Effect.catchAll(() => git(["init", "--quiet", "--bare", dir], "created"))
      )
      const url = new URL(remote.url)
      // The pin's host is a plain name or address: curl reads "-host" or "+host" as another instruction and would not pin it (attack 41 F1).
      if (!REMOTE_HOST.test(url.hostname)) return yield* new Unavailable({ message: "The eval remote could not be fetched: its host is not a DNS name or an IPv4 address" })
      const scheme = url.protocol === "https:" ? "https" : "http"
      const port = url.port === "" ? (scheme === "https" ? "443" : "80") : url.port
      const pinned = remote.addresses.map((address) => (address.includes(":") ? `[${address}]` : address)).join(",")
      const secret = remote.token === null ? null : Redacted.value(remote.token)
      const settings = [
        ["protocol.allow", "never"],
        [`protocol.${scheme}.allow`, "always"],
        ["http.followRedirects", "false"],
        ["http.curloptResolve", `${url.hostname}:${port}:${pinned}`],
        ["credential.helper", ""],
        ["http.lowSpeedLimit", "1024"],
        ["http.lowSpeedTime", "30"],
        // Large objects streamed, not inflated in memory, by one thread: a small pack of a huge file costs little (attack 41 F3).
        ["core.bigFileThreshold", "1m"],
        ["pack.threads", "1"],
        ...(secret === null ? [] : [["http.extraHeader", `Authorization: Basic ${Buffer.from(`x-access-token:${secret}`).toString("base64")}`]])
      ]
      const env = {
        ...gitEnv,
        GIT_CONFIG_COUNT: String(settings.length),
        ...Object.fromEntries(settings.flatMap(([key, value], i) => [[`GIT_CONFIG_KEY_${i}`, key], [`GIT_CONFIG_VALUE_${i}`, value]]))
      }
      const args = ["--git-dir", dir, "fetch", "--quiet", "--depth", "1", "--no-tags", "--no-recurse-submodules", "--end-of-options", remote.url, remote.ref ?? "HEAD"]
      const tooLarge = `it is larger than ${Math.round(remote.maxBytes / 1024 / 1024)} MiB`
      let stoppedHere = false
      const failure = yield* Effect.async<string | null>((resume) => {
        const child = spawn("git", args, { env, stdio: ["ignore", "ignore", "pipe"] })
        let stderr = ""
        let stopped: string | null = null
        child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString("utf8")).slice(0, 4000)))
        const stop = (why: string) => {
          stopped ??= why
          child.kill("SIGKILL")
        }
        const timer = setTimeout(() => stop(`it took longer than ${remote.timeoutMs / 1000} s`), remote.timeoutMs)
        let checking = false
        const sizes = setInterval(() => {
          if (checking) return
          checking = true
          void diskBytes(dir, remote.maxBytes).then((bytes) => {
            checking = false
            if (bytes > remote.maxBytes) stop(tooLarge)
          })
        }, SIZE_CHECK_MS)
        child.on("error", () => stop("git could not be started"))
        child.on("close", (code) => {
          clearTimeout(timer)
          clearInterval(sizes)
          if (stopped !== null) {
            stoppedHere = true
            return resume(Effect.succeed(stopped))
          }
          // Faster than the checks: what it fetched is measured once more.
          if (code === 0) {
            return void diskBytes(dir, remote.maxBytes).then((bytes) => {
              stoppedHere = bytes > remote.maxBytes
              resume(Effect.succeed(stoppedHere ? tooLarge : null))
            })
          }
          const said = stderr.split("\n").map((line) => line.replace(/^(fatal|error): /, "").trim()).find((line) => line.length > 0) ?? `git ended with ${code}`
          // Refused, git would ask for a user and password, which it may not.
          if (/^could not read (Username|Password)/.test(said)) return resume(Effect.succeed(`the remote refused access ${secret === null ? "(no token was sent)" : "with the token sent"}`))
          resume(Effect.succeed(secret === null ? said : said.replaceAll(secret, "<token>")))
        })
        return Effect.sync(() => stop("it was given up"))
      })
      if (failure !== null) {
        // What a fetch stopped here left (a pack part way, one too large) is not kept; a fetch git refused leaves what was there, which a run may be reading.
        if (stoppedHere) yield* remove(repository)
        return yield* new Unavailable({ message: `The eval remote could not be fetched: ${failure}` })
      }
      const commit = yield* git(["--git-dir", dir, "rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}"], "read")
      return commit.stdout.trim()
    })

    /**
     * Records that `repository` is used now, and deletes the repositories beside it in its folder
     * but the `count - 1` most recently used (a cache of remotes keeps `count` in all).
     */
    const keepRecent = (repository: string, count: number) =>
      Effect.promise(async () => {
        const dir = pathOf(repository)
        const folder = path.dirname(dir)
        await fs.mkdir(folder, { recursive: true })
        const now = new Date()
        await fs.utimes(dir, now, now).catch(() => undefined)
        const others = await Promise.all(
          (await fs.readdir(folder)).filter((name) => name !== path.basename(dir)).map(async (name) => ({ name, usedMs: (await fs.stat(path.join(folder, name)).catch(() => null))?.mtimeMs ?? 0 }))
        )
        others.sort((a, b) => b.usedMs - a.usedMs)
        for (const stale of others.slice(count - 1)) await fs.rm(path.join(folder, stale.name), { recursive: true, force: true })
      })

    /** Whether the repository has a commit on `ref`. */
    const hasBranch = (repository: string, ref: string) =>
      Effect.promise(() => run("git", ["--git-dir", pathOf(repository), "rev-parse", "--verify", "--quiet", `refs/heads/${ref}`], { env: gitEnv }).then(() => true, () => false))

    return { pathOf, create, setDefaultBranch, remove, backend, pushReportFile, treeFiles, hasBranch, resolveCommit, commitFiles, fetchRemote, keepRecent } as const
  })
}) {}
