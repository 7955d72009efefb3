import { lazy, Suspense, useCallback, useEffect, useMemo, useState } from "react"
import { Link, usePath } from "./components/Link"
import { fetchLocalKey, forgetKey, storedKey, storeKey } from "./client/Session"
import { type Session, SessionContext } from "./client/SessionContext"
import { useApi } from "./client/useApi"
import { AgentRunsPage } from "./pages/AgentRuns"
import { AccuracyPage } from "./pages/Accuracy"
import { EvalsPage } from "./pages/Evals"
import { KnowledgePage } from "./pages/Knowledge"
import { ReportsPage } from "./pages/Reports"
import { ProjectsPage } from "./pages/Projects"
import { BranchesPage } from "./pages/Branches"
import { SandboxesPage } from "./pages/Sandboxes"
import { AuditPage } from "./pages/Audit"
import { ChatPage } from "./pages/Chat"
import { ConnectionsPage } from "./pages/Connections"
import { DashboardPage } from "./pages/Dashboard"
import { GovernancePage } from "./pages/Governance"
import { KeysPage } from "./pages/Keys"
import { McpConnectPage } from "./pages/McpConnect"
import { SchemaPage } from "./pages/Schema"
import { SignIn } from "./pages/SignIn"

// The editor is most of the bundle: it loads when the Query page first opens.
const QueryPage = lazy(() => import("./pages/Query").then((m) => ({ default: m.QueryPage })))

// Client routes must not be gateway paths (/api, /mcp, /local-api-key, /health): the web port answers those itself.
const PAGES = [
  { path: "/", title: "Dashboard", view: DashboardPage },
  { path: "/connections", title: "Connections", view: ConnectionsPage },
  { path: "/schema", title: "Schema", view: SchemaPage },
  { path: "/query", title: "Query", view: QueryPage },
  { path: "/chat", title: "Chat", view: ChatPage },
  { path: "/runs", title: "Agent runs", view: AgentRunsPage },
  { path: "/evals", title: "Evaluations", view: EvalsPage },
  { path: "/accuracy", title: "Accuracy", view: AccuracyPage },
  { path: "/knowledge", title: "Knowledge", view: KnowledgePage },
  { path: "/reports", title: "Reports", view: ReportsPage },
  { path: "/sandboxes", title: "Sandboxes", view: SandboxesPage },
  { path: "/projects", title: "Projects", view: ProjectsPage },
  { path: "/branches", title: "Branches", view: BranchesPage },
  { path: "/audit", title: "Audit log", view: AuditPage },
  { path: "/governance", title: "Governance", view: GovernancePage },
  { path: "/keys", title: "API keys", view: KeysPage },
  { path: "/connect", title: "MCP connect", view: McpConnectPage }
] as const

const pageFor = (pathname: string) => PAGES.find((p) => p.path === pathname) ?? PAGES[0]

type SignedIn = { readonly state: "checking" } | { readonly state: "out"; readonly reason: string | null } | { readonly state: "in"; readonly key: string; readonly local: boolean }

export const App = () => {
  const [signedIn, setSignedIn] = useState<SignedIn>({ state: "checking" })
  const path = usePath()
  useEffect(() => {
    // Reloads reuse the tab's key, so only a new tab asks the gateway for its local key.
    const stored = storedKey()
    if (stored !== null) return setSignedIn({ state: "in", ...stored })
    fetchLocalKey().then((key) => {
      if (key === null) return setSignedIn({ state: "out", reason: null })
      storeKey({ key, local: true })
      setSignedIn({ state: "in", key, local: true })
    })
  }, [])
  const signOut = useCallback((reason?: string) => {
    forgetKey()
    setSignedIn({ state: "out", reason: reason ?? null })
  }, [])
  const session = useMemo<Session | null>(() => (signedIn.state === "in" ? { key: signedIn.key, local: signedIn.local, signOut } : null), [signedIn, signOut])
  const page = pageFor(path)
  useEffect(() => {
    document.title = `${page.title} · Sluice`
    // On a narrow window the nav scrolls sideways: keep the current page's link in view.
    document.querySelector('nav [aria-current="page"]')?.scrollIntoView({ block: "nearest", inline: "nearest" })
  }, [page, session])

  if (signedIn.state === "checking") return <p className="muted center">Starting…</p>
  if (session === null) {
    return (
      <SignIn
        reason={signedIn.state === "out" ? signedIn.reason : null}
        onSignedIn={(key) => {
          storeKey({ key, local: false })
          setSignedIn({ state: "in", key, local: false })
        }}
      />
    )
  }
  const View = page.view
  return (
    <SessionContext.Provider value={session}>
      <div className="shell">
        <a className="skip" href="#main">
          Skip to content
        </a>
        <header>
          <Link className="brand" to="/">
            Sluice
          </Link>
          <nav aria-label="Main">
            {PAGES.map((p) => (
              <Link key={p.path} to={p.path} current={p === page}>
                {p.title}
              </Link>
            ))}
          </nav>
          <span className="who">
            {session.local ? (
              <span className="muted small">local admin</span>
            ) : (
              <>
                <Who />{" "}
                <button type="button" onClick={() => signOut()}>
                  Sign out
                </button>
              </>
            )}
          </span>
        </header>
        <main id="main" tabIndex={-1}>
          <Suspense fallback={<p className="muted">Loading…</p>}>
            <View />
          </Suspense>
        </main>
      </div>
    </SessionContext.Provider>
  )
}

/** Who this tab is signed in as: a key by its prefix, or a cloud user. */
const Who = () => {
  const [self] = useApi((client) => client.keys.self())
  if (self.state !== "ready") return null
  const { kind, user_id, key_prefix, scopes } = self.value
  return (
    <span className="muted small" title={`scopes: ${scopes.join(", ")}`}>
      {kind === "jwt" ? user_id : `key ${key_prefix}…`}
    </span>
  )
}
