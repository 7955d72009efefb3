import { Duration, Effect, Schedule, Schema } from "effect"
import { Conflict, Unavailable } from "../../src/domain/Errors"
import { AppConfig } from "../AppConfig"
import { requestJson } from "../JsonService"
import type { PoolTarget } from "../connectors/ConnectorPools"
import type { BranchCopy, BranchProvider } from "./BranchProvider"

// A branch of any size is ready in seconds on such a service; one not ready after this is given up (and deleted).
const READY_WITHIN = Duration.minutes(5)
const POLL_EVERY = Duration.millis(250)

const Operation = Schema.Struct({ id: Schema.String, status: Schema.String })
const Created = Schema.Struct({
  branch: Schema.Struct({ id: Schema.String }),
  endpoints: Schema.Array(Schema.Struct({ host: Schema.String })),
  operations: Schema.optionalWith(Schema.Array(Operation), { default: () => [] }),
  connection_uris: Schema.optionalWith(Schema.Array(Schema.Struct({ connection_uri: Schema.String })), { default: () => [] })
})
const Removed = Schema.Struct({ operations: Schema.optionalWith(Schema.Array(Operation), { default: () => [] }) })
const OperationReply = Schema.Struct({ operation: Operation })
const Listed = Schema.Struct({ branches: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String })) })

const FAILED = new Set(["failed", "error", "cancelled", "skipped"])

const urlOf = (text: string) => {
  try {
    return new URL(text)
  } catch {
    return null
  }
}

/** A branch's reference: `<project>/<branch id>` (one with no project is in the connection's project). */
const refOf = (ref: string, project: string) => {
  const slash = ref.indexOf("/")
  return slash < 0 ? { project, branch: ref } : { project: ref.slice(0, slash), branch: ref.slice(slash + 1) }
}

/** The connection's branching settings, its API key joined back in. */
const branchingOf = (target: PoolTarget) => {
  const c = target.connection
  return c.db_type === "postgresql" && c.branching !== undefined && c.branching.api_key !== undefined ? c.branching : null
}

/**
 * Branches on a hosted branching service that speaks Neon's REST API (v2): a copy-on-write branch
 * of the project's branch that holds the connection's database, with a compute endpoint of its own,
 * made in seconds whatever the database's size. The service copies the project's roles with the
 * branch, so the branch is reached with the connection's own role and password, on the endpoint's
 * host. The service's address is the gateway's (SP_NEON_API_URL), never a connection's: a connection
 * names only its project and API key, and the key goes nowhere else.
 */
export class NeonBranches extends Effect.Service<NeonBranches>()("sluice/NeonBranches", {
  effect: Effect.gen(function* () {
    const base = (yield* AppConfig).neonApiUrl.toString().replace(/\/+$/, "")

    const call = <A, I>(target: PoolTarget, method: "GET" | "POST" | "DELETE", route: string, reply: Schema.Schema<A, I>, body?: unknown, project?: string) =>
      Effect.gen(function* () {
        const branching = branchingOf(target)
        if (branching === null) return yield* new Conflict({ message: "The connection has no branching service configured (its branching settings or API key are missing)" })
        const url = `${base}/projects/${encodeURIComponent(project ?? branching.project_id)}${route}`
        return yield* requestJson("branching service", { method, url, headers: { authorization: `Bearer ${branching.api_key}` }, body, secrets: [branching.api_key ?? ""] }, reply)
      }).pipe(
        Effect.catchTag("ServiceRefused", () =>
          Effect.fail(new Conflict({ message: "The branching service refused the connection's API key (or the key may not use its project): set a valid key in the connection's branching settings" }))
        )
      )

    /** Waits until the service has finished every operation it started. */
    const settled = (target: PoolTarget, operations: ReadonlyArray<typeof Operation.Type>, project?: string) =>
      Effect.forEach(
        operations,
        (operation) =>
          call(target, "GET", `/operations/${encodeURIComponent(operation.id)}`, OperationReply, undefined, project).pipe(
            Effect.flatMap((reply) => {
              const status = reply?.operation.status ?? "finished"
              if (status === "finished") return Effect.succeed(true)
              if (FAILED.has(status)) return Effect.fail(new Unavailable({ message: `The branching service's ${operation.id} ended ${status}` }))
              return Effect.succeed(false)
            }),
            Effect.repeat({ until: (done) => done, schedule: Schedule.spaced(POLL_EVERY) }),
            Effect.timeoutFail({ duration: READY_WITHIN, onTimeout: () => new Unavailable({ message: "The branching service did not finish making the branch in 5 minutes" }) })
          ),
        { discard: true }
      )

    /** The connection's database and role, on the copy (the roles come with the branch). */
    const plan = (target: PoolTarget): BranchCopy => {
      const c = target.connection
      return {
        database: c.db_type === "postgresql" ? c.database : "",
        role: c.db_type === "postgresql" ? c.username : "",
        password: null,
        host: null,
        port: null,
        ref: null
      }
    }

    /** The branch's name at the service: the gateway's id, so one left mid-way can be found again by name. */
    const nameOf = (id: string) => `sluice-${id}`

    const create = Effect.fn("NeonBranches.create")(function* (target: PoolTarget, parent: BranchCopy | null, copy: BranchCopy, id: string, placed: (copy: BranchCopy) => Effect.Effect<void, Unavailable>) {
      const project = branchingOf(target)?.project_id ?? ""
      const parentRef = parent?.ref === null || parent?.ref === undefined ? null : refOf(parent.ref, project)
      if (parentRef !== null && parentRef.project !== project) {
        return yield* new Conflict({ message: "The parent branch is in another of the service's projects than the connection's: branch from main" })
      }
      const parentId = parentRef?.branch ?? branchingOf(target)?.parent_branch_id
      const made = yield* call(target, "POST", "/branches", Created, {
        branch: { name: nameOf(id), ...(parentId === undefined ? {} : { parent_id: parentId }) },
        endpoints: [{ type: "read_write" }]
      })
      if (made === null) return yield* new Conflict({ message: "The branching service has no such project, or no such parent branch: check the connection's branching settings" })
      const endpoint = made.endpoints[0]
      const uri = made.connection_uris[0] === undefined ? null : urlOf(made.connection_uris[0].connection_uri)
      const placement: BranchCopy = { ...copy, ref: `${project}/${made.branch.id}`, host: endpoint?.host ?? uri?.hostname ?? null, port: uri !== null && uri.port !== "" ? Number(uri.port) : 5432 }
      yield* placed(placement)
      return yield* Effect.gen(function* () {
        if (placement.host === null || placement.host === "") return yield* new Unavailable({ message: "The branching service made the branch without a compute endpoint" })
        if (!Number.isInteger(placement.port) || placement.port! < 1 || placement.port! > 65_535) {
          return yield* new Unavailable({ message: "The branching service answered with an endpoint port that is no port (1-65535); nothing was done there" })
        }
        yield* settled(target, made.operations)
        return placement
      }).pipe(Effect.tapError(() => Effect.ignore(remove(target, placement, id))))
    })

    /** The branch where it was made: in the project it was made in, whatever the connection names now. */
    const remove = Effect.fn("NeonBranches.remove")(function* (target: PoolTarget, copy: BranchCopy, id: string) {
      const current = branchingOf(target)?.project_id ?? ""
      const ref = copy.ref === null ? null : refOf(copy.ref, current)
      const project = ref?.project ?? current
      let branch = ref?.branch ?? null
      if (branch === null) {
        const listed = yield* call(target, "GET", `/branches?search=${encodeURIComponent(nameOf(id))}`, Listed, undefined, project)
        branch = listed?.branches.find((b) => b.name === nameOf(id))?.id ?? null
        if (branch === null) return
      }
      const removed = yield* call(target, "DELETE", `/branches/${encodeURIComponent(branch)}`, Removed, undefined, project)
      if (removed !== null) yield* settled(target, removed.operations, project)
    })

    const provider: BranchProvider = { kind: "hosted", plan, create, remove }
    return provider
  }),
  dependencies: [AppConfig.Default]
}) {}
