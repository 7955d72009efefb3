import { useEffect, useRef } from "react"

/** The web server's empty report document (app/WebServer.ts): an opaque origin with a CSP of its own. */
const FRAME = "/report-frame"

/**
 * A report's HTML shown in a sandboxed frame on an opaque origin: handed over by message once the
 * frame says it is ready, never written into this page or served from its origin. Its scripts run
 * but reach no network and nothing of the app (its key, its storage, its pages).
 */
export const ReportFrame = ({ title, html }: { readonly title: string; readonly html: string }) => {
  const frame = useRef<HTMLIFrameElement>(null)
  useEffect(() => {
    const ready = (event: MessageEvent) => {
      if (event.source !== frame.current?.contentWindow || event.data !== "report-frame-ready") return
      // The frame's origin is opaque ("null"): "*" is the only target that reaches it.
      frame.current?.contentWindow?.postMessage(html, "*")
    }
    addEventListener("message", ready)
    return () => removeEventListener("message", ready)
  }, [html])
  return <iframe ref={frame} key={html} className="report-frame" title={title} src={FRAME} sandbox="allow-scripts" referrerPolicy="no-referrer" />
}
