import * as path from "node:path"
import { Effect } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { GitRepositories } from "../../layers/GitRepositories"
import { browseFolder, directoryFiles, insideRoots } from "../../layers/ProjectFiles"
import type { CreateDbtProject, DbtLayer, DbtModel, UpdateDbtProject } from "../domain/DbtProject"
import { InvalidRequest, NotAvailableHere, NotFound } from "../domain/Errors"
import { type Principal, principalLabel } from "../domain/Principal"
import { DbtProjectsRepo, type DbtProjectRow } from "../repos/DbtProjectsRepo"
import { scanDbtProject } from "../schema/DbtProjectScan"
import { Connections } from "./Connections"
import { WorkspaceProjects } from "./WorkspaceProjects"

const summary = ({ scan, ...row }: DbtProjectRow) => ({ ...row, counts: scan?.counts ?? null })
const detail = (row: DbtProjectRow) => ({ ...summary(row), scan: row.scan })
const notFound = (name: string) => new NotFound({ message: `There is no dbt project ${name}` })

/**
 * dbt projects: a folder under SP_PROJECT_ROOTS (self-hosted only: a path on the gateway's host is
 * no tenant's) or a workspace project's repository, scanned for its models by layer, sources, tests
 * and lineage — the denominator evaluation runs take their coverage from.
 */
export class DbtProjects extends Effect.Service<DbtProjects>()("sluice/DbtProjects", {
  effect: Effect.gen(function* () {
    const repo = yield* DbtProjectsRepo
    const config = yield* AppConfig
    const repositories = yield* GitRepositories
    const workspace = yield* WorkspaceProjects
    const connections = yield* Connections

    const localFolders = () =>
      config.selfHosted ? Effect.void : Effect.fail(new NotAvailableHere({ message: "Folders on the gateway's host are for self-hosted gateways; in cloud mode a dbt project is a workspace project's repository" }))

    /** The folder `given` names, resolved, when it is inside an allowed root. */
    const allowedFolder = (given: string) =>
      Effect.gen(function* () {
        yield* localFolders()
        if (config.projectRoots.length === 0) return yield* new InvalidRequest({ message: "No folders are open to dbt projects: set SP_PROJECT_ROOTS to the folders that hold them" })
        const candidate = path.isAbsolute(given) ? given : path.join(config.projectRoots[0]!, given)
        const inside = yield* Effect.promise(() => insideRoots(config.projectRoots, candidate))
        if (inside === null) return yield* new InvalidRequest({ message: "path must be an existing folder under SP_PROJECT_ROOTS" })
        return inside.real
      })

    const find = (principal: Principal, name: string) => Effect.flatMap(repo.find(principal.orgId, name), (row) => (row === null ? Effect.fail(notFound(name)) : Effect.succeed(row)))

    /** Reads the project's files again and keeps what they say (or why they could not be read). */
    const rescan = (principal: Principal, row: DbtProjectRow) =>
      Effect.gen(function* () {
        const files =
          row.source === "directory"
            ? directoryFiles(yield* allowedFolder(row.path!))
            : yield* Effect.gen(function* () {
                const project = yield* workspace.get(principal, row.workspace_project_id!)
                if (!(yield* repositories.hasBranch(project.id, project.default_branch))) {
                  return yield* new InvalidRequest({ message: `The workspace project ${project.name} has no commits on ${project.default_branch} yet: push the dbt project first` })
                }
                return repositories.treeFiles(project.id, project.default_branch, row.subdirectory)
              })
        const scan = yield* Effect.tryPromise({ try: () => scanDbtProject(files), catch: () => new InvalidRequest({ message: "The project's files could not be read" }) })
        return scan === null
          ? yield* repo.saveScan(principal.orgId, row.name, null, `There is no dbt_project.yml in ${row.source === "directory" ? "the folder" : `the repository${row.subdirectory === "" ? "" : `'s ${row.subdirectory}`}`}`)
          : yield* repo.saveScan(principal.orgId, row.name, scan, null)
      }).pipe(Effect.catchTag("InvalidRequest", (error) => repo.saveScan(principal.orgId, row.name, null, error.message)))

    const create = Effect.fn("DbtProjects.create")(function* (principal: Principal, input: CreateDbtProject) {
      if ((input.path === undefined) === (input.workspace_project_id === undefined)) {
        return yield* new InvalidRequest({ message: "Give either path (a folder under SP_PROJECT_ROOTS) or workspace_project_id" })
      }
      if (input.connection_name !== null) yield* connections.get(principal, input.connection_name)
      const folder = input.path === undefined ? null : yield* allowedFolder(input.path)
      if (input.workspace_project_id !== undefined) yield* workspace.get(principal, input.workspace_project_id)
      const row = yield* repo.insert(principal.orgId, {
        name: input.name,
        source: folder === null ? "workspace" : "directory",
        path: folder,
        workspace_project_id: input.workspace_project_id ?? null,
        subdirectory: input.subdirectory,
        description: input.description,
        connection_name: input.connection_name,
        created_by: principalLabel(principal)
      })
      return detail((yield* rescan(principal, row)) ?? row)
    })

    const get = Effect.fn("DbtProjects.get")(function* (principal: Principal, name: string) {
      return detail(yield* find(principal, name))
    })

    const list = Effect.fn("DbtProjects.list")(function* (principal: Principal) {
      return { items: (yield* repo.list(principal.orgId)).map(summary) }
    })

    const update = Effect.fn("DbtProjects.update")(function* (principal: Principal, name: string, change: UpdateDbtProject) {
      if (change.connection_name !== undefined && change.connection_name !== null) yield* connections.get(principal, change.connection_name)
      return detail((yield* repo.update(principal.orgId, name, change)) ?? (yield* notFound(name)))
    })

    const remove = Effect.fn("DbtProjects.remove")(function* (principal: Principal, name: string) {
      if (!(yield* repo.remove(principal.orgId, name))) return yield* notFound(name)
      return { name, deleted: true }
    })

    const scan = Effect.fn("DbtProjects.scan")(function* (principal: Principal, name: string) {
      const row = yield* find(principal, name)
      return detail((yield* rescan(principal, row)) ?? row)
    })

    /** One level of a folder under SP_PROJECT_ROOTS; at the top, the roots themselves. */
    const browse = Effect.fn("DbtProjects.browse")(function* (given: string | undefined) {
      yield* localFolders()
      if (given === undefined) {
        return { path: null, entries: config.projectRoots.map((root) => ({ name: root, kind: "directory" as const, size: null })), dbt_project: false }
      }
      const folder = yield* allowedFolder(given)
      const listed = yield* Effect.tryPromise({ try: () => browseFolder(folder), catch: () => new InvalidRequest({ message: "path is not a folder that can be listed" }) })
      return { path: folder, ...listed }
    })

    /** The last scan's models, of one layer or all; NotFound for a project never scanned well. */
    const models = Effect.fn("DbtProjects.models")(function* (principal: Principal, name: string, layer?: DbtLayer) {
      const row = yield* find(principal, name)
      if (row.scan === null) return yield* new NotFound({ message: `${name} has no scan: ${row.scan_error ?? "scan it first"}` })
      return { project: row.name, scan: row.scan, models: row.scan.models.filter((m) => layer === undefined || m.layer === layer) }
    })

    /** A model's upstream (what it selects from, to the sources) and downstream (what selects from it), from the last scan. */
    const lineage = Effect.fn("DbtProjects.lineage")(function* (principal: Principal, name: string, model: string) {
      const { scan } = yield* models(principal, name)
      const byName = new Map(scan.models.map((m) => [m.name.toLowerCase(), m]))
      const root = byName.get(model.toLowerCase())
      if (root === undefined) return yield* new NotFound({ message: `${name} has no model ${model}` })
      const walk = (start: DbtModel, next: (m: DbtModel) => ReadonlyArray<DbtModel>) => {
        const seen = new Set<string>()
        const queue = [...next(start)]
        const found: Array<DbtModel> = []
        while (queue.length > 0) {
          const current = queue.shift()!
          if (seen.has(current.name)) continue
          seen.add(current.name)
          found.push(current)
          queue.push(...next(current))
        }
        return found
      }
      const upstream = walk(root, (m) => m.refs.flatMap((ref) => byName.get(ref.toLowerCase()) ?? []))
      const downstream = walk(root, (m) => scan.models.filter((other) => other.refs.some((ref) => ref.toLowerCase() === m.name.toLowerCase())))
      const sources = [...new Set([root, ...upstream].flatMap((m) => m.sources))].sort()
      return { model: root, upstream: upstream.map((m) => m.name), downstream: downstream.map((m) => m.name), sources }
    })

    return { create, get, list, update, remove, scan, browse, models, lineage } as const
  }),
  dependencies: [DbtProjectsRepo.Default, GitRepositories.Default, WorkspaceProjects.Default, Connections.Default]
}) {}
