const STORAGE_KEY = "sluice.api_key"

/** The key this tab signed in with: session storage only (gone with the tab), never a URL. */
export const storedKey = (): string | null => window.sessionStorage.getItem(STORAGE_KEY)
export const storeKey = (key: string) => window.sessionStorage.setItem(STORAGE_KEY, key)
export const forgetKey = () => window.sessionStorage.removeItem(STORAGE_KEY)

/** A self-hosted gateway hands its local key to a browser on the same machine; elsewhere this is null. */
export const fetchLocalKey = async (): Promise<string | null> => {
  const response = await fetch("/local-api-key", { headers: { accept: "application/json" } }).catch(() => null)
  if (response === null || !response.ok) return null
  const body: unknown = await response.json().catch(() => null)
  return typeof body === "object" && body !== null && typeof (body as { key?: unknown }).key === "string" ? (body as { key: string }).key : null
}

