import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { GitRepositories } from "../../layers/GitRepositories"
import { InsufficientScope, NotFound } from "../domain/Errors"
import { WorkspaceProjectId } from "../domain/Ids"
import { decodeCursor, pageOf, TimeAndIdCursor } from "../domain/Pagination"
import { type Principal, principalLabel } from "../domain/Principal"
import type { CreateWorkspaceProject, UpdateWorkspaceProject } from "../domain/WorkspaceProject"
import { WorkspaceProjectsRepo } from "../repos/WorkspaceProjectsRepo"
import { Connections } from "./Connections"

const DEFAULT_LIMIT = 50
const ID = /^wsp_[0-9a-f]{32}$/

const notFound = (id: string) => new NotFound({ message: `There is no workspace project ${id}` })

/** Workspace projects: a git repository each, cloned and pushed over the gateway's git endpoint, with the branches it protects. */
export class WorkspaceProjects extends Effect.Service<WorkspaceProjects>()("sluice/WorkspaceProjects", {
  effect: Effect.gen(function* () {
    const repo = yield* WorkspaceProjectsRepo
    const repositories = yield* GitRepositories
    const connections = yield* Connections

    const knownConnection = (principal: Principal, name: string | null | undefined) => (name === null || name === undefined ? Effect.void : Effect.asVoid(connections.get(principal, name)))

    const create = Effect.fn("WorkspaceProjects.create")(function* (principal: Principal, input: CreateWorkspaceProject) {
      yield* knownConnection(principal, input.connection_name)
      const id = WorkspaceProjectId.make(`wsp_${randomBytes(16).toString("hex")}`)
      // The repository is made inside the record's transaction, and removed again if that does not commit.
      return yield* repo
        .insert(
          principal.orgId,
          {
            id,
            name: input.name,
            display_name: input.display_name ?? input.name,
            description: input.description,
            source: "managed",
            connection_name: input.connection_name,
            default_branch: input.default_branch,
            protected_branches: [...new Set(input.protected_branches)],
            tags: [...new Set(input.tags)],
            by: principalLabel(principal)
          },
          repositories.create(id, input.default_branch)
        )
        .pipe(Effect.tapErrorCause(() => Effect.ignore(repositories.remove(id))))
    })

    /** The caller's org's project by id; NotFound for another org's, or an id never given out. */
    const get = Effect.fn("WorkspaceProjects.get")(function* (principal: Principal, id: string) {
      if (!ID.test(id)) return yield* notFound(id)
      return (yield* repo.find(principal.orgId, WorkspaceProjectId.make(id))) ?? (yield* notFound(id))
    })

    const update = Effect.fn("WorkspaceProjects.update")(function* (principal: Principal, id: string, change: UpdateWorkspaceProject) {
      const before = yield* get(principal, id)
      // The write key that pushes must not be the one that lifts a branch's protection, or goes around it (another default branch,
      // an archived project pushed to again).
      if ((change.protected_branches !== undefined || change.default_branch !== undefined || change.status !== undefined) && !principal.scopes.includes("admin")) {
        return yield* new InsufficientScope({ message: "Changing a project's protected branches, default branch or status needs the admin scope", required_scope: "admin" })
      }
      yield* knownConnection(principal, change.connection_name)
      const updated = yield* repo.update(principal.orgId, before.id, {
        ...change,
        ...(change.protected_branches === undefined ? {} : { protected_branches: [...new Set(change.protected_branches)] }),
        ...(change.tags === undefined ? {} : { tags: [...new Set(change.tags)] }),
        by: principalLabel(principal)
      })
      if (updated === null) return yield* notFound(id)
      if (updated.default_branch !== before.default_branch) yield* repositories.setDefaultBranch(updated.id, updated.default_branch)
      return updated
    })

    const remove = Effect.fn("WorkspaceProjects.remove")(function* (principal: Principal, id: string) {
      const project = yield* get(principal, id)
      // Deleting a project takes its protected history with it: a write key could then make it again, unprotected.
      if (project.protected_branches.length > 0 && !principal.scopes.includes("admin")) {
        return yield* new InsufficientScope({ message: "Deleting a project with protected branches needs the admin scope", required_scope: "admin" })
      }
      if (!(yield* repo.remove(principal.orgId, project.id, repositories.remove(project.id)))) return yield* notFound(id)
      return { id: project.id, deleted: true }
    })

    const list = Effect.fn("WorkspaceProjects.list")(function* (principal: Principal, params: { readonly limit?: number | undefined; readonly cursor?: string | undefined }) {
      const limit = params.limit ?? DEFAULT_LIMIT
      const before = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, TimeAndIdCursor)
      const rows = yield* repo.page(principal.orgId, before, limit + 1)
      return pageOf(rows, limit, (last) => [last.created_at.toISOString(), last.id])
    })

    /** How to clone the project over the gateway's git endpoint at `base` (the origin the caller reached): the key goes in as the password, never in the URL. */
    const cloneUrl = Effect.fn("WorkspaceProjects.cloneUrl")(function* (principal: Principal, id: string, base: string) {
      const project = yield* get(principal, id)
      const url = `${base}/git/${project.id}.git`
      return {
        clone_url: url,
        default_branch: project.default_branch,
        protected_branches: project.protected_branches,
        username: "sluice",
        instructions: `git clone ${url} — give any user name and an API key as the password (read to clone and pull, write to push); a credential helper keeps it out of the URL and your shell history.`
      }
    })

    return { create, get, update, remove, list, cloneUrl } as const
  }),
  dependencies: [WorkspaceProjectsRepo.Default, GitRepositories.Default, Connections.Default]
}) {}
