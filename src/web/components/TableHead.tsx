/** A table's column headings; `actions` names a trailing column of buttons for screen readers only. */
export const TableHead = ({ columns, actions }: { readonly columns: ReadonlyArray<string>; readonly actions?: string }) => (
  <thead>
    <tr>
      {columns.map((c) => (
        <th key={c} scope="col">
          {c}
        </th>
      ))}
      {actions !== undefined && (
        <th scope="col">
          <span className="visually-hidden">{actions}</span>
        </th>
      )}
    </tr>
  </thead>
)
