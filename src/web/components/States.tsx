import type { ReactNode } from "react"
import type { ApiFailure } from "../client/ApiClient"
import type { Loadable } from "../client/useApi"

export const Loading = ({ what }: { readonly what: string }) => (
  <p className="muted" role="status" aria-live="polite">
    Loading {what}…
  </p>
)

export const ErrorBanner = ({ error, onRetry }: { readonly error: ApiFailure | null; readonly onRetry?: () => void }) =>
  error === null ? null : (
    <div className="error" role="alert">
      <strong>{error.message}</strong>
      {error.code !== "error" && <code className="code-tag">{error.code}</code>}
      {onRetry !== undefined && (
        <button type="button" className="link" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  )

export const Empty = ({ children }: { readonly children: ReactNode }) => <div className="empty">{children}</div>

/** Renders a loadable's three states: loading, the API's error with a retry, or the view. */
export const Loaded = <A,>({ value, what, onRetry, children }: {
  readonly value: Loadable<A>
  readonly what: string
  readonly onRetry: () => void
  readonly children: (value: A) => ReactNode
}) =>
  value.state === "loading" ? <Loading what={what} /> : value.state === "failed" ? <ErrorBanner error={value.error} onRetry={onRetry} /> : <>{children(value.value)}</>
