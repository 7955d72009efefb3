import { type HourCounts, niceMax } from "../charts"

const HEIGHT = 120
const SERIES = [
  { field: "success", label: "allowed", className: "bar-ok" },
  { field: "refused", label: "blocked", className: "bar-bad" },
  { field: "error", label: "failed", className: "bar-warn" }
] as const

const hourLabel = (hour: number) => new Date(hour * 1000).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" })

/** Requests per hour as stacked bars (allowed, blocked, failed); each bar names its counts for screen readers and on hover. */
export const HourlyChart = ({ series }: { readonly series: ReadonlyArray<HourCounts> }) => {
  const top = niceMax(Math.max(0, ...series.map((h) => h.success + h.refused + h.error)))
  const width = Math.max(series.length, 1) * 10
  const totals = SERIES.map((s) => `${series.reduce((sum, h) => sum + h[s.field], 0)} ${s.label}`).join(", ")
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${HEIGHT}`} preserveAspectRatio="none" role="img" aria-label={`Requests per hour over the last ${series.length} hours: ${totals}`}>
        {series.map((h, i) => {
          let y = HEIGHT
          return (
            <g key={h.hour}>
              <title>{`${hourLabel(h.hour)}: ${h.success} allowed, ${h.refused} blocked, ${h.error} failed`}</title>
              {SERIES.map((s) => {
                const height = (h[s.field] / top) * HEIGHT
                y -= height
                return height > 0 ? <rect key={s.field} className={s.className} x={i * 10 + 1} y={y} width={8} height={height} /> : null
              })}
            </g>
          )
        })}
      </svg>
      <figcaption className="legend small">
        {SERIES.map((s) => (
          <span key={s.field}>
            <span className={`swatch ${s.className}`} aria-hidden="true" /> {s.label}
          </span>
        ))}
        <span className="muted">max {top}/h</span>
      </figcaption>
    </figure>
  )
}
