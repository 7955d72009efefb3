import { useState } from "react"

/** A destructive button that asks once more, in place, before it acts. */
export const ConfirmButton = ({ label, confirm, onConfirm, disabled }: {
  readonly label: string
  readonly confirm: string
  readonly onConfirm: () => void
  readonly disabled?: boolean
}) => {
  const [asking, setAsking] = useState(false)
  if (!asking) {
    return (
      <button type="button" className="danger" disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    )
  }
  return (
    <span className="confirm" role="group" aria-label={confirm}>
      <span>{confirm}</span>
      <button
        type="button"
        className="danger"
        autoFocus
        onClick={() => {
          setAsking(false)
          onConfirm()
        }}
      >
        Yes, {label.toLowerCase()}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  )
}
