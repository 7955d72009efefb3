import { useRef } from "react"
import { useVirtualizer } from "@tanstack/react-virtual"
import { formatCell } from "../format"

const ROW_HEIGHT = 28

/** Only the rows in view are in the page, so 100,000 rows scroll as smoothly as 100. */
export const ResultGrid = ({ columns, rows, masked }: {
  readonly columns: ReadonlyArray<{ readonly name: string; readonly type: string }>
  readonly rows: ReadonlyArray<ReadonlyArray<unknown>>
  readonly masked: ReadonlyMap<string, string>
}) => {
  const scroller = useRef<HTMLDivElement>(null)
  const virtual = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_HEIGHT, overscan: 20 })
  const template = `repeat(${columns.length}, minmax(8rem, 1fr))`
  return (
    <div className="grid" ref={scroller} role="table" aria-rowcount={rows.length + 1} aria-colcount={columns.length}>
      <div className="grid-head" role="row" style={{ gridTemplateColumns: template }}>
        {columns.map((c) => (
          <div role="columnheader" key={c.name} title={c.type}>
            {c.name}
            {masked.has(c.name) && (
              <span className="badge" title={`PII rule: ${masked.get(c.name)}`}>
                masked
              </span>
            )}
          </div>
        ))}
      </div>
      <div style={{ height: virtual.getTotalSize(), position: "relative" }}>
        {virtual.getVirtualItems().map((item) => (
          <div
            role="row"
            aria-rowindex={item.index + 2}
            key={item.key}
            className="grid-row"
            style={{ gridTemplateColumns: template, transform: `translateY(${item.start}px)`, height: ROW_HEIGHT }}
          >
            {rows[item.index]!.map((cell, i) => (
              <div role="cell" key={i} className={cell === null ? "null" : undefined}>
                {formatCell(cell)}
              </div>
            ))}
          </div>
        ))}
      </div>
    </div>
  )
}
