import { useState } from "react"
import { useApi } from "../client/useApi"

const REMEMBERED = "sluice.connection"

/** The org's connections and the one this tab is working on (remembered across pages for the session). */
export const useChosenConnection = () => {
  const [connections, reload] = useApi((client) => client.connections.list({ urlParams: {} }))
  const [picked, setPicked] = useState(() => sessionStorage.getItem(REMEMBERED) ?? "")
  const items = connections.state === "ready" ? connections.value.items : []
  const chosen = items.some((c) => c.name === picked) ? picked : (items[0]?.name ?? "")
  const choose = (name: string) => {
    sessionStorage.setItem(REMEMBERED, name)
    setPicked(name)
  }
  return { connections, reload, chosen, choose } as const
}

export const ConnectionPicker = ({ items, value, onChange }: {
  readonly items: ReadonlyArray<{ readonly name: string; readonly db_type: string }>
  readonly value: string
  readonly onChange: (name: string) => void
}) => (
  <label>
    Connection
    <select value={value} onChange={(e) => onChange(e.target.value)}>
      {items.map((c) => (
        <option key={c.name} value={c.name}>
          {c.name} ({c.db_type})
        </option>
      ))}
    </select>
  </label>
)
