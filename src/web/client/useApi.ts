import { useCallback, useEffect, useState } from "react"
import type { Effect } from "effect"
import { type ApiFailure, type Client, run } from "./ApiClient"
import { type Session, useSession } from "./SessionContext"

/** One call with the session's key; a 401 (the key was deleted or expired) signs the tab out. */
const runSigned = <A>(session: Session, call: (client: Client) => Effect.Effect<A, unknown>) =>
  run(session.key, call).catch((failure: ApiFailure) => {
    if (failure.status === 401) session.signOut(failure.message)
    throw failure
  })

export type Loadable<A> =
  | { readonly state: "loading" }
  | { readonly state: "failed"; readonly error: ApiFailure }
  | { readonly state: "ready"; readonly value: A }

/** Loads when the view opens (and on reload()). */
export const useApi = <A>(call: (client: Client) => Effect.Effect<A, unknown>, deps: ReadonlyArray<unknown> = []) => {
  const session = useSession()
  const [result, setResult] = useState<Loadable<A>>({ state: "loading" })
  const [generation, setGeneration] = useState(0)
  useEffect(() => {
    let live = true
    setResult((previous) => (previous.state === "ready" ? previous : { state: "loading" }))
    runSigned(session, call).then(
      (value) => live && setResult({ state: "ready", value }),
      (error: ApiFailure) => live && setResult({ state: "failed", error })
    )
    return () => {
      live = false
    }
  }, [session.key, generation, ...deps])
  const reload = useCallback(() => setGeneration((n) => n + 1), [])
  return [result, reload] as const
}

/** An action (create, delete, run…) with its pending state and last failure. */
export const useAction = () => {
  const session = useSession()
  const [pending, setPending] = useState(false)
  const [error, setError] = useState<ApiFailure | null>(null)
  const perform = useCallback(
    async <A>(call: (client: Client) => Effect.Effect<A, unknown>): Promise<A | undefined> => {
      setPending(true)
      setError(null)
      try {
        return await runSigned(session, call)
      } catch (failure) {
        setError(failure as ApiFailure)
        return undefined
      } finally {
        setPending(false)
      }
    },
    [session]
  )
  return { pending, error, perform, clearError: () => setError(null) }
}
