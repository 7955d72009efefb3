/** A horizontal bar for a share of a whole (top keys, budget usage), with its numbers for screen readers; a spent limit turns red. */
export const Meter = ({ value, max, label, limit = false }: { readonly value: number; readonly max: number; readonly label: string; readonly limit?: boolean }) => {
  const share = max > 0 ? Math.min(1, value / max) : 0
  return (
    <div className={`meter${limit && share >= 1 ? " full" : ""}`} role="meter" aria-label={label} aria-valuemin={0} aria-valuemax={max} aria-valuenow={value}>
      <span style={{ width: `${share * 100}%` }} />
    </div>
  )
}
