import { createHash } from "node:crypto"
import { Effect, Either, Option, Schema } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { gatewayEgress } from "../../layers/connectors/EgressPolicy"
import { isScalar, parseDocument, visit } from "yaml"
import { GitRepositories } from "../../layers/GitRepositories"
import { zipSetFiles } from "../../layers/objects/ZipSetFiles"
import type { EvalSetSource } from "../domain/EvalConfig"
import { EvalSetManifest, MANIFEST_FILES, type SetFiles, SetFilesRefusal } from "../domain/EvalSet"
import { InvalidRequest, Unavailable } from "../domain/Errors"
import { parseCsv } from "../domain/grading/Csv"
import type { Table } from "../domain/grading/Tables"
import { issueMessages } from "../domain/ParseIssues"
import type { OrgId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { EvalAccess } from "./EvalAccess"
import { EvalConfigs } from "./EvalConfigs"
import { EvalUploads } from "./EvalUploads"
import { keyedLocks } from "./KeyedLocks"
import { Secrets } from "./Secrets"
import { WorkspaceProjects } from "./WorkspaceProjects"

const MANIFEST_MAX_BYTES = 4 * 1024 * 1024
const GOLD_CSV_MAX_BYTES = 16 * 1024 * 1024
const REMOTE_FETCH_TIMEOUT_MS = 120_000
// Remote fetches at once on a gateway process (one an organization), and the caches an organization keeps (the most recently used).
const REMOTE_FETCHES = 4
const REMOTE_CACHES = 3

/**
 * Where an organization's copy of a remote is kept, under SP_REPOS_DIR: its id hex-encoded (two
 * ids are never one folder), the remote by its URL as a parser reads it (`/./`, `x/../` and a
 * trailing `/` are the same repository).
 */
export const remoteCacheName = (orgId: OrgId, url: string) => {
  const parsed = new URL(url)
  const normalized = `${parsed.protocol}//${parsed.host.toLowerCase()}${parsed.pathname.replace(/\/+$/, "")}`
  return `eval-remotes/${Buffer.from(orgId).toString("hex")}/${createHash("sha256").update(normalized).digest("hex").slice(0, 32)}`
}

/** An eval set as a run uses it: `ref` is `<name>@<commit>`, the manifest checked, its gold CSV files read, its files for scripts. */
export interface LoadedEvalSet {
  readonly ref: string
  readonly source: EvalSetSource
  /** The source at the commit it was read at (an upload is its own pin). */
  readonly pinned: EvalSetSource
  readonly manifest: EvalSetManifest
  readonly goldCsv: ReadonlyMap<string, Table>
  readonly files: SetFiles
}

// A manifest of 2,000 tasks with their checks holds well under this; the schema is not asked to read more.
const MANIFEST_MAX_VALUES = 200_000

/**
 * YAML as a manifest is read: aliases bounded, a key said twice in one mapping refused. The
 * library's own duplicate check compares every key with every other (minutes for one mapping of
 * 100,000 keys); this one is a set per mapping.
 */
const parseManifestYaml = (text: string): unknown => {
  const document = parseDocument(text, { uniqueKeys: false })
  if (document.errors.length > 0) throw document.errors[0]!
  visit(document, {
    Map: (_, map) => {
      const seen = new Set<string>()
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key)
        if (seen.has(key)) throw new Error(`the key ${key.slice(0, 80)} appears twice in one mapping`)
        seen.add(key)
      }
    }
  })
  return document.toJS({ maxAliasCount: 100 })
}

/**
 * Line ends, commas, colons and opening brackets: an upper bound on the values a text can hold, read
 * before the parser, which spends far more on each value than on its bytes (and holds the event loop meanwhile).
 */
const structureOf = (text: string) => {
  let count = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 10 || c === 44 || c === 58 || c === 91 || c === 123) count++
  }
  return count
}

/** How many values a parsed document holds, counted up to just past `max`. */
const countValues = (root: unknown, max: number) => {
  let count = 0
  const stack: Array<unknown> = [root]
  while (stack.length > 0 && count <= max) {
    const value = stack.pop()
    count++
    if (Array.isArray(value)) for (const item of value) stack.push(item)
    else if (typeof value === "object" && value !== null) for (const key in value) stack.push((value as Record<string, unknown>)[key])
  }
  return count
}

const refused = (message: string) => new InvalidRequest({ message })
const io = <A>(what: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (error) => (error instanceof SetFilesRefusal ? refused(`The eval set cannot be used: ${error.message}`) : new Unavailable({ message: `The eval set could not be read (${what})` }))
  })

/** Reads and checks a set's files: no links, a manifest at its top that decodes, every file it names present, every gold CSV well formed. */
export const readEvalSet = (files: SetFiles) =>
  Effect.gen(function* () {
    const entries = yield* io("its files", files.list)
    const irregular = entries.filter((e) => !e.regular).map((e) => e.path)
    if (irregular.length > 0) return yield* refused(`The eval set holds symbolic links or submodules, which it may not: ${irregular.slice(0, 5).join(", ")}`)
    const present = new Set(entries.map((e) => e.path))
    const manifestFile = MANIFEST_FILES.find((name) => present.has(name))
    if (manifestFile === undefined) return yield* refused(`The eval set has no ${MANIFEST_FILES.join(", ")} at its top`)
    const text = yield* io(manifestFile, () => files.read(manifestFile, MANIFEST_MAX_BYTES))
    if (text === null) return yield* refused(`${manifestFile} is larger than ${MANIFEST_MAX_BYTES / 1024 / 1024} MiB`)
    const parsed = yield* Effect.try({
      try: () => {
        if (structureOf(text) > MANIFEST_MAX_VALUES) throw new Error(`the manifest is too large (more structure than ${MANIFEST_MAX_VALUES} values)`)
        const value = manifestFile.endsWith(".json") ? (JSON.parse(text) as unknown) : parseManifestYaml(text)
        const values = countValues(value, MANIFEST_MAX_VALUES)
        if (values > MANIFEST_MAX_VALUES) throw new Error(`the manifest is too large (more than ${MANIFEST_MAX_VALUES} values)`)
        return value
      },
      catch: (error) => refused(`${manifestFile}: ${error instanceof Error ? error.message.split("\n")[0] : "not valid"}`)
    })
    const decoded = Schema.decodeUnknownEither(EvalSetManifest, { errors: "all" })(parsed)
    if (Either.isLeft(decoded)) return yield* refused(`${manifestFile}: ${issueMessages(decoded.left).slice(0, 20).join("; ")}`)
    const manifest = decoded.right
    const named = manifest.tasks.flatMap((task) => [task.setup, task.teardown, ...task.checks.map((c) => (c.type === "table" ? c.gold_csv : undefined))])
    const missing = [...new Set(named.filter((file): file is string => file !== undefined && !present.has(file)))]
    if (missing.length > 0) return yield* refused(`${manifestFile} names files the set does not hold: ${missing.slice(0, 10).join(", ")}`)
    const goldCsv = new Map<string, Table>()
    for (const file of new Set(manifest.tasks.flatMap((task) => task.checks.flatMap((c) => (c.type === "table" && c.gold_csv !== undefined ? [c.gold_csv] : []))))) {
      const csv = yield* io(file, () => files.read(file, GOLD_CSV_MAX_BYTES))
      if (csv === null) return yield* refused(`${file} is larger than ${GOLD_CSV_MAX_BYTES / 1024 / 1024} MiB`)
      goldCsv.set(file, yield* Effect.try({ try: () => parseCsv(csv), catch: (error) => refused(`${file}: ${error instanceof Error ? error.message : "not CSV"}`) }))
    }
    return { manifest, goldCsv }
  })

/** The configured eval set, read from its workspace project's repository at a commit, or from an uploaded archive in place. */
export class EvalSets extends Effect.Service<EvalSets>()("sluice/EvalSets", {
  effect: Effect.gen(function* () {
    const configs = yield* EvalConfigs
    const projects = yield* WorkspaceProjects
    const git = yield* GitRepositories
    const access = yield* EvalAccess
    const uploads = yield* EvalUploads
    const secrets = yield* Secrets
    const config = yield* AppConfig
    const egress = yield* gatewayEgress(config)
    // One fetch at a time an organization (git's own locks would refuse a second into one cache), a few a process.
    const fetching = keyedLocks<OrgId>()
    const fetchSlots = yield* Effect.makeSemaphore(REMOTE_FETCHES)

    /**
     * The commit `source.ref` names on the remote, in the organization's cache of it (a commit
     * already there is not fetched again): its host checked as a connection's is (cloud: no
     * loopback, link-local or metadata address, never the gateway's own store), its token the
     * organization secret `secret_name`.
     */
    const remoteCommit = (principal: Principal, source: Extract<EvalSetSource, { kind: "remote" }>) =>
      Effect.gen(function* () {
        const cache = remoteCacheName(principal.orgId, source.url)
        return yield* fetching(
          principal.orgId,
          Effect.gen(function* () {
            yield* git.keepRecent(cache, REMOTE_CACHES)
            if (source.ref !== null && /^[0-9a-f]{40}$/.test(source.ref)) {
              const held = yield* git.resolveCommit(cache, source.ref)
              if (held !== null) return { cache, commit: held }
            }
            const url = new URL(source.url)
            const host = url.hostname.replace(/^\[|\]$/g, "")
            const addresses = yield* egress.check({ host, port: Number(url.port || (url.protocol === "https:" ? 443 : 80)) }).pipe(
              Effect.mapError((refusal) => refused(`The eval remote cannot be reached: ${refusal.message}`))
            )
            if (addresses.length === 0) return yield* refused(`The eval remote's host ${host} does not resolve`)
            const token = source.secret_name === null ? Option.none() : yield* secrets.organizationSecret(principal.orgId, source.secret_name)
            if (source.secret_name !== null && Option.isNone(token)) return yield* refused(`The eval remote's token, the organization secret ${source.secret_name}, is not set: PUT /api/org/secrets`)
            const commit = yield* fetchSlots.withPermits(1)(git.fetchRemote(cache, {
              url: source.url,
              ref: source.ref,
              addresses: addresses.map((a) => a.address),
              token: Option.getOrNull(token),
              maxBytes: config.evalRemoteMaxMb * 1024 * 1024,
              timeoutMs: REMOTE_FETCH_TIMEOUT_MS
            }))
            return { cache, commit }
          })
        )
      })

    /**
     * The set at `source`; its `pinned` source names the commit it was read at, so a run reads the
     * same set to its end whatever is pushed or configured meanwhile.
     */
    const loadSource = Effect.fn("EvalSets.loadSource")(function* (principal: Principal, source: EvalSetSource) {
      if (source.kind === "upload") {
        const archive = yield* uploads.archive(principal.orgId, source.upload_id).pipe(
          Effect.catchTag("NotFound", (e) => Effect.fail(refused(`The eval set's upload cannot be used: ${e.message}`)))
        )
        const files = zipSetFiles(archive.backend, archive.key, archive.size)
        const { manifest, goldCsv } = yield* readEvalSet(files)
        return { ref: `${manifest.name}@${source.upload_id}`, source, pinned: source, manifest, goldCsv, files } satisfies LoadedEvalSet
      }
      if (source.kind === "remote") {
        const { cache, commit } = yield* remoteCommit(principal, source)
        const files = git.commitFiles(cache, commit, source.path === "." ? "" : source.path)
        const { manifest, goldCsv } = yield* readEvalSet(files).pipe(
          Effect.catchTag("Unavailable", () => Effect.fail(refused(`The eval remote has no folder ${source.path} at ${source.ref ?? "its default branch"}`)))
        )
        return { ref: `${manifest.name}@${commit}`, source, pinned: { ...source, ref: commit }, manifest, goldCsv, files } satisfies LoadedEvalSet
      }
      const project = yield* projects.get(principal, source.workspace_project_id).pipe(
        Effect.catchTag("NotFound", () => Effect.fail(refused("The eval set's workspace project no longer exists: set eval_set again")))
      )
      const ref = source.ref ?? project.default_branch
      const commit = yield* git.resolveCommit(project.id, ref)
      if (commit === null) return yield* refused(`The eval repository has no ${ref}: push the eval set to it first`)
      const files = git.commitFiles(project.id, commit, source.path === "." ? "" : source.path)
      const { manifest, goldCsv } = yield* readEvalSet(files).pipe(
        Effect.catchTag("Unavailable", () => Effect.fail(refused(`The eval repository has no folder ${source.path} at ${ref}`)))
      )
      return { ref: `${manifest.name}@${commit}`, source, pinned: { ...source, ref: commit }, manifest, goldCsv, files } satisfies LoadedEvalSet
    })

    /** The configured eval set. */
    const load = Effect.fn("EvalSets.load")(function* (principal: Principal) {
      const source = (yield* configs.current(principal)).eval_set
      if (source === null) return yield* refused("No eval set is configured: set eval_set with PUT /api/evals/config (a folder of a workspace project or of a git remote, or an uploaded archive)")
      return yield* loadSource(principal, source)
    })

    /** The configured set's parsed manifest, for staff of an allow-listed organization. */
    const tasks = Effect.fn("EvalSets.tasks")(function* (principal: Principal) {
      yield* access.allowed(principal)
      const loaded = yield* load(principal)
      return { ref: loaded.ref, source: loaded.source, manifest: loaded.manifest }
    })

    return { load, loadSource, tasks } as const
  }),
  dependencies: [EvalConfigs.Default, WorkspaceProjects.Default, GitRepositories.Default, EvalAccess.Default, EvalUploads.Default, Secrets.Default]
}) {}
