import { useState } from "react"
import { useApi, useAction } from "../client/useApi"
import { ConfirmButton } from "../components/ConfirmButton"
import { ConnectionPicker, useChosenConnection } from "../components/ConnectionPicker"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { TableHead } from "../components/TableHead"
import { formatTime } from "../format"

/** Database branches of a connection's project: list, make, compare with main, delete. */
export const BranchesPage = () => {
  const { connections, chosen, choose } = useChosenConnection()
  const [project, setProject] = useState("default")
  const postgres = connections.state === "ready" ? connections.value.items.filter((c) => c.db_type === "postgresql") : []
  const connection = postgres.some((c) => c.name === chosen) ? chosen : (postgres[0]?.name ?? "")
  return (
    <section aria-labelledby="branches-title">
      <h1 id="branches-title">Branches</h1>
      <p className="muted">
        Disposable copies of a PostgreSQL connection's database to build into (dbt reaches them through the dbt proxy). Each is governed: what the connection blocks is
        not in it and PII columns hold their masked values. main, staging and prod are never branches.
      </p>
      <div className="row">
        {postgres.length > 0 && <ConnectionPicker items={postgres} value={connection} onChange={choose} />}
        <label>
          Project
          <input value={project} maxLength={64} pattern="[A-Za-z0-9_\-]{1,64}" onChange={(e) => setProject(e.target.value)} />
        </label>
      </div>
      {connections.state === "ready" && postgres.length === 0 ? (
        <Empty>Branches are made on PostgreSQL connections; there is none yet.</Empty>
      ) : connection === "" || !/^[A-Za-z0-9_-]{1,64}$/.test(project) ? null : (
        <ProjectBranches key={`${connection} ${project}`} connection={connection} project={project} />
      )}
    </section>
  )
}

const ProjectBranches = ({ connection, project }: { readonly connection: string; readonly project: string }) => {
  const [branches, reload] = useApi((client) => client.dbBranches.list({ path: { name: connection, project } }), [connection, project])
  const [name, setName] = useState("")
  const [compared, setCompared] = useState<string | null>(null)
  const act = useAction()
  return (
    <section aria-label={`Branches of ${project}`}>
      <ErrorBanner error={act.error} />
      <form
        aria-label="New branch"
        className="row"
        onSubmit={async (e) => {
          e.preventDefault()
          const made = await act.perform((client) => client.dbBranches.create({ path: { name: connection, project }, payload: { name: name.trim(), parent: "main" } }))
          if (made !== undefined) {
            setName("")
            reload()
          }
        }}
      >
        <label>
          Branch name
          <input value={name} maxLength={64} pattern="[A-Za-z0-9_\-]{1,64}" required onChange={(e) => setName(e.target.value)} />
        </label>
        <button type="submit" disabled={act.pending}>
          {act.pending ? "Copying…" : "New branch"}
        </button>
      </form>
      <Loaded value={branches} what="branches" onRetry={reload}>
        {({ items }) =>
          items.length === 0 ? (
            <Empty>No branches of {project} yet.</Empty>
          ) : (
            <div className="scroll-x">
              <table>
                <TableHead columns={["Branch", "From", "Database", "Status", "Governed", "Created"]} actions="Actions" />
                <tbody>
                  {items.map((branch) => (
                    <tr key={branch.id}>
                      <td>{branch.name}</td>
                      <td>{branch.parent}</td>
                      <td>
                        <code>{branch.database}</code>
                      </td>
                      <td>{branch.status}</td>
                      <td>{branch.governance === null ? "—" : `${branch.governance.dropped.length} dropped, ${branch.governance.masked.length} masked`}</td>
                      <td>{formatTime(branch.created_at)}</td>
                      <td className="actions">
                        <button type="button" className="link" aria-pressed={compared === branch.name} onClick={() => setCompared(compared === branch.name ? null : branch.name)}>
                          {compared === branch.name ? "Close" : "Diff"}
                        </button>{" "}
                        <ConfirmButton
                          label="Delete"
                          confirm={`Delete ${branch.name} and its database?`}
                          disabled={act.pending}
                          onConfirm={async () => {
                            const done = await act.perform((client) => client.dbBranches.remove({ path: { name: connection, project, branch: branch.name } }))
                            if (done !== undefined) {
                              if (compared === branch.name) setCompared(null)
                              reload()
                            }
                          }}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loaded>
      {compared !== null && <BranchDiff connection={connection} project={project} branch={compared} />}
    </section>
  )
}

const BranchDiff = ({ connection, project, branch }: { readonly connection: string; readonly project: string; readonly branch: string }) => {
  const [diff, reload] = useApi((client) => client.dbBranches.diff({ path: { name: connection }, urlParams: { project, base: "main", compare: branch } }), [connection, project, branch])
  return (
    <Loaded value={diff} what="the diff" onRetry={reload}>
      {({ diff: changes }) => (
        <article aria-label={`Diff of ${branch}`}>
          <h2>main → {branch}</h2>
          {changes.added_tables.length + changes.removed_tables.length + changes.changed_tables.length === 0 ? (
            <Empty>No difference in the tables.</Empty>
          ) : (
            <ul>
              {changes.added_tables.map((t) => (
                <li key={`+${t}`} className="diff-added">
                  + {t}
                </li>
              ))}
              {changes.removed_tables.map((t) => (
                <li key={`-${t}`} className="diff-removed">
                  − {t}
                </li>
              ))}
              {changes.changed_tables.map((c) => (
                <li key={`~${c.table}`}>
                  ~ {c.table}: {[...c.added_columns.map((a) => `+${a.name} ${a.type}`), ...c.removed_columns.map((r) => `−${r}`), ...c.retyped_columns.map((r) => `${r.column} ${r.from}→${r.to}`)].join(", ")}
                </li>
              ))}
            </ul>
          )}
        </article>
      )}
    </Loaded>
  )
}
