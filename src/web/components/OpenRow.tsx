import { type ReactNode, useState } from "react"

/** A table whose rows open one at a time: a row's toggle (its words shown and hidden), the row of detail under the open one, and a row opened by the page. */
export const useOpenRow = () => {
  const [open, setOpen] = useState<string | null>(null)
  const toggle = (id: string, show: string, hide: string) => (
    <button type="button" className="link" aria-expanded={open === id} onClick={() => setOpen(open === id ? null : id)}>
      {open === id ? hide : show}
    </button>
  )
  const detail = (id: string, columns: number, content: () => ReactNode) =>
    open === id ? (
      <tr>
        <td colSpan={columns}>{content()}</td>
      </tr>
    ) : null
  return { toggle, detail, show: setOpen }
}
