import { type ReactNode, useEffect, useState } from "react"

/** Moves to a client route without reloading: the History API, announced as a popstate so every usePath() hears it. */
export const navigate = (to: string) => {
  window.history.pushState(null, "", to)
  window.dispatchEvent(new PopStateEvent("popstate"))
}

/** The current client route; the server answers every path with this app. */
export const usePath = () => {
  const [path, setPath] = useState(window.location.pathname)
  useEffect(() => {
    const onPop = () => setPath(window.location.pathname)
    window.addEventListener("popstate", onPop)
    return () => window.removeEventListener("popstate", onPop)
  }, [])
  return path
}

export const Link = ({ to, children, className, current }: { readonly to: string; readonly children: ReactNode; readonly className?: string; readonly current?: boolean }) => (
  <a href={to} className={className} aria-current={current ? "page" : undefined} onClick={(e) => (e.preventDefault(), navigate(to))}>
    {children}
  </a>
)
