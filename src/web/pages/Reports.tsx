import { useState } from "react"
import { useApi, useAction } from "../client/useApi"
import { ConfirmButton } from "../components/ConfirmButton"
import { ReportFrame } from "../components/ReportFrame"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { TableHead } from "../components/TableHead"
import { formatTime } from "../format"

const kib = (bytes: number) => `${Math.max(1, Math.round(bytes / 1024))} KiB`

/** The organization's reports and dashboards: listed, each shown in a sandboxed frame, deleted by an admin. */
export const ReportsPage = () => {
  const [reports, reload] = useApi((client) => client.reports.list({ urlParams: { limit: 200 } }))
  const [open, setOpen] = useState<string | null>(null)
  const act = useAction()
  return (
    <section aria-labelledby="reports-title">
      <h1 id="reports-title">Reports</h1>
      <p className="muted">
        HTML reports and dashboards published through <code>POST /api/reports</code> or the <code>publish_report</code> MCP tool. Each is shown in a sandboxed frame: a
        static document, where no script runs and nothing loads from elsewhere.
      </p>
      <ErrorBanner error={act.error} />
      <Loaded value={reports} what="reports" onRetry={reload}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No reports yet.</Empty>
          ) : (
            <div className="scroll-x">
              <table>
                <TableHead columns={["Title", "Kind", "Size", "Views", "Updated", "By"]} actions="Actions" />
                <tbody>
                  {page.items.map((report) => (
                    <tr key={report.id}>
                      <td>{report.title}</td>
                      <td>{report.kind}</td>
                      <td>{kib(report.bytes)}</td>
                      <td>{report.view_count}</td>
                      <td>{formatTime(report.updated_at)}</td>
                      <td className="clip">{report.updated_by}</td>
                      <td className="actions">
                        <button type="button" className="link" aria-pressed={open === report.id} onClick={() => setOpen(open === report.id ? null : report.id)}>
                          {open === report.id ? "Close" : "View"}
                        </button>{" "}
                        <ConfirmButton
                          label="Delete"
                          confirm={`Delete ${report.title}?`}
                          disabled={act.pending}
                          onConfirm={async () => {
                            const done = await act.perform((client) => client.reports.remove({ path: { id: report.id } }))
                            if (done !== undefined) {
                              if (open === report.id) setOpen(null)
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
      {open !== null && <ReportView id={open} />}
    </section>
  )
}

const ReportView = ({ id }: { readonly id: string }) => {
  const [report, reload] = useApi((client) => client.reports.get({ path: { id } }), [id])
  return (
    <Loaded value={report} what="the report" onRetry={reload}>
      {(shown) => (
        <article className="report" aria-label={`Report: ${shown.title}`}>
          <h2>{shown.title}</h2>
          <ReportFrame key={`${shown.id} ${shown.updated_at.toISOString()}`} title={shown.title} html={shown.html} />
        </article>
      )}
    </Loaded>
  )
}
