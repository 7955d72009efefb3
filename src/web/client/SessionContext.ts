import { createContext, useContext } from "react"

export interface Session {
  readonly key: string
  /** True when the key came from the gateway's local access (self-hosted, same machine). */
  readonly local: boolean
  readonly signOut: () => void
}

export const SessionContext = createContext<Session | null>(null)

export const useSession = (): Session => {
  const session = useContext(SessionContext)
  if (session === null) throw new Error("useSession outside a signed-in view")
  return session
}
