const STORAGE_KEY = "sluice.api_key"
const LOCAL_FLAG = "sluice.local"

export interface StoredKey {
  readonly key: string
  /** Handed over by a self-hosted gateway to this machine, rather than pasted. */
  readonly local: boolean
}

/** The key this tab signed in with: session storage only (gone with the tab), never a URL. */
export const storedKey = (): StoredKey | null => {
  const key = window.sessionStorage.getItem(STORAGE_KEY)
  return key === null ? null : { key, local: window.sessionStorage.getItem(LOCAL_FLAG) === "1" }
}
export const storeKey = ({ key, local }: StoredKey) => {
  window.sessionStorage.setItem(STORAGE_KEY, key)
  if (local) window.sessionStorage.setItem(LOCAL_FLAG, "1")
  else window.sessionStorage.removeItem(LOCAL_FLAG)
}
export const forgetKey = () => {
  window.sessionStorage.removeItem(STORAGE_KEY)
  window.sessionStorage.removeItem(LOCAL_FLAG)
}

/** A self-hosted gateway hands its local key to a browser on the same machine; elsewhere this is null. */
export const fetchLocalKey = async (): Promise<string | null> => {
  const response = await fetch("/local-api-key", { headers: { accept: "application/json" } }).catch(() => null)
  if (response === null || !response.ok) return null
  const body: unknown = await response.json().catch(() => null)
  return typeof body === "object" && body !== null && typeof (body as { key?: unknown }).key === "string" ? (body as { key: string }).key : null
}

