import { createContext, useContext } from "react"

export interface Session {
  /** An API key or a cloud session token (JWT): sent the same way, as a Bearer credential. */
  readonly key: string
  /** True when the key came from the gateway's local access (self-hosted, same machine). */
  readonly local: boolean
  /** Forgets the credential; `reason` is shown on the sign-in page (an expired session, a deleted key). */
  readonly signOut: (reason?: string) => void
}

export const SessionContext = createContext<Session | null>(null)

export const useSession = (): Session => {
  const session = useContext(SessionContext)
  if (session === null) throw new Error("useSession outside a signed-in view")
  return session
}
