import { type FormEvent, useState } from "react"
import { KEY_PATTERN } from "../../domain/ApiKey"
import { type ApiFailure, run } from "../client/ApiClient"

// A cloud identity provider's session token: three base64url parts.
const JWT_PATTERN = /^[\w-]+\.[\w-]+\.[\w-]+$/

/** Paste an API key or a cloud session token; it is checked against the gateway before the tab keeps it. */
export const SignIn = ({ onSignedIn, reason }: { readonly onSignedIn: (key: string) => void; readonly reason: string | null }) => {
  const [key, setKey] = useState("")
  const [error, setError] = useState<string | null>(null)
  const [checking, setChecking] = useState(false)
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    const candidate = key.trim()
    if (!KEY_PATTERN.test(candidate) && !JWT_PATTERN.test(candidate)) {
      setError("An API key is sp_ followed by 32 hexadecimal characters; a session token is a JWT (three parts separated by dots).")
      return
    }
    setChecking(true)
    setError(null)
    try {
      await run(candidate, (client) => client.connections.list({ urlParams: {} }))
      onSignedIn(candidate)
    } catch (failure) {
      // A credential without the read scope is still valid: pages it cannot use say so themselves.
      if ((failure as ApiFailure).status === 403) onSignedIn(candidate)
      else setError((failure as ApiFailure).message)
    } finally {
      setChecking(false)
    }
  }
  return (
    <main className="sign-in">
      <h1>Sluice</h1>
      <p className="muted">The governed gateway between your AI tools and your databases.</p>
      {reason !== null && error === null && (
        <p className="notice" role="status">
          Signed out: {reason}
        </p>
      )}
      <form onSubmit={submit}>
        <label htmlFor="api-key">API key or session token</label>
        <input
          id="api-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          placeholder="sp_…"
          value={key}
          onChange={(e) => setKey(e.target.value)}
          aria-describedby="api-key-help"
        />
        <p id="api-key-help" className="muted small">
          Kept in this tab only, until you sign out or close it. Make a key with <code>npx sluice keys create</code>; on Sluice Cloud, paste the session
          token your identity provider issued.
        </p>
        {error !== null && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={checking}>
          {checking ? "Checking…" : "Sign in"}
        </button>
      </form>
    </main>
  )
}
