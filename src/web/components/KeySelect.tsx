import type { ApiKey } from "../../domain/ApiKey"

/** Picks one of the org's keys by name and prefix (never the key itself, which is not stored). */
export const KeySelect = ({ keys, value, onChange, none, required = false }: {
  readonly keys: ReadonlyArray<ApiKey>
  readonly value: string
  readonly onChange: (keyId: string) => void
  readonly none: string
  readonly required?: boolean
}) => (
  <label>
    Key
    <select value={value} onChange={(e) => onChange(e.target.value)} required={required}>
      <option value="">{none}</option>
      {keys.map((k) => (
        <option key={k.id} value={k.id}>
          {k.name} ({k.prefix}…)
        </option>
      ))}
    </select>
  </label>
)
