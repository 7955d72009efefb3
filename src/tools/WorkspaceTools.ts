import { Effect, Schema } from "effect"
import { ConnectionName } from "../domain/Connection"
import { BranchProjectName, DbBranch, DbBranchName } from "../domain/DbBranch"
import { SchemaDiff } from "../domain/SchemaSnapshot"
import { DbtCounts, DbtLayer, DbtModel, DbtProjectName, DbtSource } from "../domain/DbtProject"
import { DbBranches } from "../services/DbBranches"
import { DbtProjects } from "../services/DbtProjects"
import { DbtRunTokens } from "../services/DbtRunTokens"
import { WorkspaceProjects } from "../services/WorkspaceProjects"
import { defineTool, READ_ONLY, type ToolDefinition } from "./ToolDefinition"
import { NoArguments } from "./ToolSchemas"

const strict = { parseOptions: { onExcessProperty: "error" } } as const
const connectionName = ConnectionName.annotations({ description: "The PostgreSQL connection whose database the branches copy, as list_connections names it" })
const project = BranchProjectName.annotations({ description: "The branch project: a name grouping branches (a dbt project's, say)" })
const BranchesInput = Schema.Struct({ connection_name: connectionName, project }).annotations(strict)
const branchName = (description: string) => DbBranchName.annotations({ description })
const BranchInput = Schema.Struct({ connection_name: connectionName, project, branch: branchName("The branch's name, as list_branches names it") }).annotations(strict)
const dbtProject = DbtProjectName.annotations({ description: "The dbt project's name, as GET /api/projects lists it" })
const ListedProject = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  display_name: Schema.String,
  default_branch: Schema.String,
  protected_branches: Schema.Array(Schema.String),
  status: Schema.String,
  clone_path: Schema.String
})
const WRITES: typeof READ_ONLY = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }

/** Workspace projects, dbt projects and database branches, as REST has them; no tool result holds a secret. */
export const workspaceTools = Effect.gen(function* () {
  const workspace = yield* WorkspaceProjects
  const dbt = yield* DbtProjects
  const branches = yield* DbBranches
  const tokens = yield* DbtRunTokens

  const listWorkspaceProjects = defineTool({
    name: "list_workspace_projects",
    scope: "read",
    title: "List workspace projects",
    description: "Lists the organization's workspace projects (git repositories served by Sluice): name, id, default and protected branches, status and the path to clone (on the gateway's URL, with an API key as the password).",
    input: NoArguments,
    output: Schema.Struct({ projects: Schema.Array(ListedProject) }),
    annotations: READ_ONLY,
    run: (_, call) =>
      Effect.map(workspace.list(call.principal, { limit: 50 }), (page) => {
        const listed = page.items.map((p) => ({ id: p.id, name: p.name, display_name: p.display_name, default_branch: p.default_branch, protected_branches: p.protected_branches, status: p.status, clone_path: `/git/${p.id}.git` }))
        const text =
          listed.length === 0
            ? "No workspace projects yet: POST /api/workspace-projects makes one."
            : listed.map((p) => `- ${p.display_name} (id=${p.id}, ${p.status}): clone ${p.clone_path}, default branch ${p.default_branch}${p.protected_branches.length > 0 ? `, protected ${p.protected_branches.join(", ")}` : ""}`).join("\n")
        return { text, structured: { projects: listed } }
      })
  })

  const dbtModels = defineTool({
    name: "dbt_models",
    scope: "read",
    title: "A dbt project's models",
    description: "The models of a scanned dbt project (POST /api/projects registers one), by layer (staging, intermediate, marts, other), with their materialization, the models they ref() and the sources they read; also its sources and test count.",
    input: Schema.Struct({
      project: dbtProject,
      layer: Schema.optionalWith(DbtLayer.annotations({ description: "Only the models of this layer: staging, intermediate, marts or other" }), { exact: true })
    }).annotations(strict),
    output: Schema.Struct({ project: Schema.String, counts: DbtCounts, models: Schema.Array(DbtModel), sources: Schema.Array(DbtSource) }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.map(dbt.models(call.principal, args.project, args.layer), ({ scan, models }) => ({
        text: [
          `${scan.project_name}: ${scan.counts.models} models (${scan.counts.staging} staging, ${scan.counts.intermediate} intermediate, ${scan.counts.marts} marts, ${scan.counts.other} other), ${scan.counts.sources} sources, ${scan.counts.tests} tests${scan.from_manifest ? " (from its manifest)" : ""}`,
          ...models.map((m) => `- ${m.name} [${m.layer}${m.materialized === null ? "" : `, ${m.materialized}`}] ${m.path}${m.refs.length > 0 ? ` ← ${m.refs.join(", ")}` : ""}${m.sources.length > 0 ? ` ← source ${m.sources.join(", ")}` : ""}`)
        ].join("\n"),
        structured: { project: scan.project_name, counts: scan.counts, models, sources: scan.sources }
      }))
  })

  const dbtLineage = defineTool({
    name: "dbt_lineage",
    scope: "read",
    title: "A dbt model's lineage",
    description: "What a model of a scanned dbt project is built from (upstream models, down to its sources) and what is built from it (downstream models).",
    input: Schema.Struct({ project: dbtProject, model: Schema.String.pipe(Schema.pattern(/^[\w.-]{1,200}$/)).annotations({ description: "The model's name, as dbt_models lists it" }) }).annotations(strict),
    output: Schema.Struct({ model: DbtModel, upstream: Schema.Array(Schema.String), downstream: Schema.Array(Schema.String), sources: Schema.Array(Schema.String) }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.map(dbt.lineage(call.principal, args.project, args.model), (lineage) => ({
        text: `${lineage.model.name} [${lineage.model.layer}]\nupstream: ${lineage.upstream.join(", ") || "none"}\nsources: ${lineage.sources.join(", ") || "none"}\ndownstream: ${lineage.downstream.join(", ") || "none"}`,
        structured: lineage
      }))
  })

  const listBranches = defineTool({
    name: "list_branches",
    scope: "read",
    title: "List database branches",
    description: "The database branches of a project on a PostgreSQL connection: name, parent, database, status, owning job and lease.",
    input: BranchesInput,
    output: Schema.Struct({ branches: Schema.Array(DbBranch) }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.map(branches.list(call.principal, args.connection_name, args.project), ({ items }) => ({
        text: items.length === 0 ? `The project ${args.project} has no branches on ${args.connection_name}.` : items.map((b) => `- ${b.name} (from ${b.parent}, database ${b.database}, ${b.status})`).join("\n"),
        structured: { branches: items }
      }))
  })

  const branchDiff = defineTool({
    name: "branch_diff",
    scope: "read",
    title: "Compare two branches' schemas",
    description: "Tables added, removed and changed from `base` (main, the connection's own database, by default) to `compare`, read live.",
    input: Schema.Struct({
      connection_name: connectionName,
      project,
      base: Schema.optionalWith(branchName("The branch compared from: main (the connection's own database) by default"), { exact: true }),
      compare: branchName("The branch compared with base")
    }).annotations(strict),
    output: Schema.Struct({ project: Schema.String, base: Schema.String, compare: Schema.String, diff: SchemaDiff }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.map(branches.diff(call.principal, args.connection_name, args.project, args.base ?? "main", args.compare), (result) => ({
        text: [
          `${result.base} → ${result.compare}:`,
          ...result.diff.added_tables.map((t) => `+ ${t}`),
          ...result.diff.removed_tables.map((t) => `- ${t}`),
          ...result.diff.changed_tables.map((c) => `~ ${c.table}: ${[...c.added_columns.map((a) => `+${a.name} ${a.type}`), ...c.removed_columns.map((r) => `-${r}`), ...c.retyped_columns.map((r) => `${r.column} ${r.from}→${r.to}`)].join(", ")}`)
        ].join("\n"),
        structured: result
      }))
  })

  const createBranch = defineTool({
    name: "create_branch",
    scope: "admin",
    title: "Make a database branch",
    description: "Copies main (the connection's own database) or another branch of the project into a new branch database owned by a role of its own; main, staging and prod are never branch names. No credential is returned: dbt reaches it through the dbt proxy (get_dbt_profile).",
    input: Schema.Struct({
      connection_name: connectionName,
      project,
      name: branchName("The new branch's name (not main, staging or prod)"),
      parent: Schema.optionalWith(branchName("The branch it copies: main (the connection's own database) by default, or another branch of the project"), { exact: true })
    }).annotations(strict),
    annotations: WRITES,
    run: (args, call) =>
      Effect.map(branches.create(call.principal, args.connection_name, args.project, { name: args.name, parent: args.parent ?? "main" }), (branch) => ({
        text: `Branch ${branch.name} of ${branch.project} is ready (database ${branch.database}, copied from ${branch.parent}).`,
        structured: { branch }
      }))
  })

  const deleteBranch = defineTool({
    name: "delete_branch",
    scope: "admin",
    title: "Delete a database branch",
    description: "Drops a branch's database and role. main, staging and prod are protected and never deleted.",
    input: BranchInput,
    annotations: { ...WRITES, destructiveHint: true, idempotentHint: true },
    run: (args, call) => Effect.map(branches.remove(call.principal, args.connection_name, args.project, args.branch), () => ({ text: `Branch ${args.branch} of ${args.project} is deleted.` }))
  })

  const getDbtProfile = defineTool({
    name: "get_dbt_profile",
    scope: "admin",
    title: "A dbt profile for a branch",
    description:
      "A profiles.yml target that points dbt at the dbt proxy for a branch, with its password read from the SLUICE_DBT_TOKEN environment variable, and the command that mints that run token with your API key (from SLUICE_API_KEY) — so no secret passes through this conversation.",
    input: Schema.Struct({
      ...BranchInput.fields,
      schema: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/)).annotations({ description: "The schema dbt builds into (public by default)" }), { exact: true })
    }).annotations(strict),
    output: Schema.Struct({ profiles_yml: Schema.String, mint_command: Schema.String }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.map(tokens.profileTemplate(call.principal, args.connection_name, args.project, args.branch, args.schema ?? "public"), (profile) => ({
        text: `Save as ~/.dbt/profiles.yml:\n\n${profile.profiles_yml}\nThen, before dbt runs, mint the token (it expires; mint again when it does):\n\n${profile.mint_command}\n`,
        structured: profile
      }))
  })

  const tools: ReadonlyArray<ToolDefinition> = [listWorkspaceProjects, dbtModels, dbtLineage, listBranches, branchDiff, createBranch, deleteBranch, getDbtProfile]
  return tools
})
