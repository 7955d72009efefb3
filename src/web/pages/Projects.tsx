import { useState } from "react"
import { useApi, useAction } from "../client/useApi"
import { ConfirmButton } from "../components/ConfirmButton"
import { CopyButton } from "../components/CopyButton"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { TableHead } from "../components/TableHead"
import { formatTime } from "../format"

const LAYERS = ["staging", "intermediate", "marts", "other"] as const

/** Workspace projects (git repositories the gateway serves, with their clone URL) and dbt projects with their scanned models by layer. */
export const ProjectsPage = () => (
  <section aria-labelledby="projects-title">
    <h1 id="projects-title">Projects</h1>
    <WorkspaceProjects />
    <DbtProjects />
  </section>
)

const WorkspaceProjects = () => {
  const [projects, reload] = useApi((client) => client.workspaceProjects.list({ urlParams: { limit: 200 } }))
  const [name, setName] = useState("")
  const act = useAction()
  const origin = window.location.origin
  return (
    <section aria-labelledby="workspace-title">
      <h2 id="workspace-title">Workspace projects</h2>
      <p className="muted">
        Git repositories the gateway serves: clone and push with an API key as the password (read to clone, write to push). Protected branches take no pushes.
      </p>
      <ErrorBanner error={act.error} />
      <form
        aria-label="New workspace project"
        className="row"
        onSubmit={async (e) => {
          e.preventDefault()
          const made = await act.perform((client) => client.workspaceProjects.create({ payload: { name: name.trim(), description: "", tags: [], connection_name: null, default_branch: "main", protected_branches: [] } }))
          if (made !== undefined) {
            setName("")
            reload()
          }
        }}
      >
        <label>
          Name
          <input value={name} maxLength={64} pattern="[A-Za-z0-9_\-]{1,64}" required onChange={(e) => setName(e.target.value)} />
        </label>
        <button type="submit" disabled={act.pending}>
          New project
        </button>
      </form>
      <Loaded value={projects} what="workspace projects" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No workspace projects yet.</Empty>
          ) : (
            <div className="scroll-x">
              <table>
                <TableHead columns={["Name", "Clone URL", "Default branch", "Protected", "Status", "Created"]} actions="Actions" />
                <tbody>
                  {page.items.map((project) => {
                    // The web app's origin serves /git too; an API key goes in as the password, never in the URL.
                    const url = `${origin}/git/${project.id}.git`
                    return (
                      <tr key={project.id}>
                        <td>{project.display_name}</td>
                        <td>
                          <code>{url}</code> <CopyButton text={`git clone ${url}`} label="Copy clone command" />
                        </td>
                        <td>{project.default_branch}</td>
                        <td>{project.protected_branches.join(", ") || "none"}</td>
                        <td>{project.status}</td>
                        <td>{formatTime(project.created_at)}</td>
                        <td className="actions">
                          <ConfirmButton
                            label="Delete"
                            confirm={`Delete ${project.name} and its repository?`}
                            disabled={act.pending}
                            onConfirm={async () => {
                              if ((await act.perform((client) => client.workspaceProjects.remove({ path: { id: project.id } }))) !== undefined) reload()
                            }}
                          />
                        </td>
                      </tr>
                    )
                  })}
                </tbody>
              </table>
            </div>
          )
        }
      </Loaded>
    </section>
  )
}

const DbtProjects = () => {
  const [projects, reload] = useApi((client) => client.dbtProjects.list())
  const [open, setOpen] = useState<string | null>(null)
  const act = useAction()
  return (
    <section aria-labelledby="dbt-title">
      <h2 id="dbt-title">dbt projects</h2>
      <p className="muted">
        Registered with <code>POST /api/projects</code> (a folder under SP_PROJECT_ROOTS, or a workspace project's repository) and scanned for models by layer, sources and tests.
      </p>
      <ErrorBanner error={act.error} />
      <Loaded value={projects} what="dbt projects" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No dbt projects yet.</Empty>
          ) : (
            <div className="scroll-x">
              <table>
                <TableHead columns={["Name", "Source", ...LAYERS.map((l) => l[0]!.toUpperCase() + l.slice(1)), "Scanned"]} actions="Actions" />
                <tbody>
                  {page.items.map((project) => (
                    <tr key={project.name}>
                      <td>{project.name}</td>
                      <td className="clip">{project.source === "directory" ? project.path : `workspace ${project.workspace_project_id}`}</td>
                      {LAYERS.map((layer) => (
                        <td key={layer}>{project.counts?.[layer] ?? "—"}</td>
                      ))}
                      <td>{project.scan_error ?? (project.scanned_at === null ? "never" : formatTime(project.scanned_at))}</td>
                      <td className="actions">
                        <button type="button" className="link" aria-pressed={open === project.name} onClick={() => setOpen(open === project.name ? null : project.name)}>
                          {open === project.name ? "Close" : "Models"}
                        </button>{" "}
                        <button
                          type="button"
                          className="link"
                          disabled={act.pending}
                          onClick={async () => {
                            if ((await act.perform((client) => client.dbtProjects.scan({ path: { name: project.name } }))) !== undefined) reload()
                          }}
                        >
                          Scan
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loaded>
      {open !== null && <DbtModels name={open} />}
    </section>
  )
}

const DbtModels = ({ name }: { readonly name: string }) => {
  const [project, reload] = useApi((client) => client.dbtProjects.get({ path: { name } }), [name])
  return (
    <Loaded value={project} what="the project's models" onRetry={reload}>
      {(shown) =>
        shown.scan === null ? (
          <Empty>{shown.scan_error ?? "Not scanned yet."}</Empty>
        ) : (
          <article aria-label={`Models of ${shown.name}`}>
            <h3>
              {shown.scan.project_name}: {shown.scan.counts.models} models{shown.scan.from_manifest ? " (from its manifest)" : ""}
            </h3>
            {LAYERS.map((layer) => {
              const models = shown.scan!.models.filter((m) => m.layer === layer)
              return models.length === 0 ? null : (
                <section key={layer} aria-label={`Layer ${layer}`}>
                  <h4>{layer}</h4>
                  <ul>
                    {models.map((m) => (
                      <li key={m.path}>
                        <code>{m.name}</code>
                        {m.materialized === null ? "" : ` (${m.materialized})`}
                        {m.refs.length > 0 ? ` ← ${m.refs.join(", ")}` : ""}
                        {m.sources.length > 0 ? ` ← source ${m.sources.join(", ")}` : ""}
                      </li>
                    ))}
                  </ul>
                </section>
              )
            })}
          </article>
        )
      }
    </Loaded>
  )
}
