/**
 * A report's HTML shown in a frame sandboxed with no permissions: an opaque origin where no script
 * runs (WebRTC, which no CSP directive Chromium honours can stop, needs one), no form submits and
 * nothing navigates the page; as a srcdoc it keeps this page's CSP, so it loads nothing from
 * elsewhere. Reports are static documents: HTML, CSS, inline SVG and data: images.
 */
export const ReportFrame = ({ title, html }: { readonly title: string; readonly html: string }) => (
  <iframe className="report-frame" title={title} srcDoc={html} sandbox="" referrerPolicy="no-referrer" />
)
