import type { ConnectionInput } from "./Connection"

/** Secret values by path: "password", "ssh_tunnel.private_key", "tls.client_key_pem"… */
export type Secrets = Readonly<Record<string, string>>

const SECRET_PATHS = [
  ["password"],
  ["access_token"],
  ["credentials_json"],
  ["ssh_tunnel", "private_key"],
  ["ssh_tunnel", "passphrase"],
  ["ssh_tunnel", "password"],
  ["tls", "client_key_pem"],
  ["branching", "api_key"]
] as const

/** The connection without its secrets (safe to store as plain JSON and to return), and the secrets. */
export const splitSecrets = (input: object): { settings: Record<string, unknown>; secrets: Secrets } => {
  const settings: Record<string, any> = structuredClone(input)
  const secrets: Record<string, string> = {}
  for (const path of SECRET_PATHS) {
    const parent = path.length === 1 ? settings : settings[path[0]]
    const field = path[path.length - 1]!
    if (parent === undefined || typeof parent[field] !== "string") continue
    secrets[path.join(".")] = parent[field]
    delete parent[field]
  }
  return { settings, secrets }
}

/** Settings and secrets back into one connection: what a connector needs to connect. */
export const joinSecrets = (settings: Record<string, unknown>, secrets: Secrets): ConnectionInput => {
  const joined: Record<string, any> = structuredClone(settings)
  for (const [path, value] of Object.entries(secrets)) {
    const [head, field] = path.split(".") as [string, string | undefined]
    if (field === undefined) joined[head] = value
    else if (joined[head] !== undefined) joined[head][field] = value
  }
  return joined as ConnectionInput
}

/**
 * Secrets for an edited connection: a secret left out of the edit keeps its stored value (the API
 * never shows secrets, so a form cannot send them back), as long as the thing it unlocks is unchanged.
 */
export const carryOverSecrets = (previous: Secrets, next: ConnectionInput, sameTarget: boolean): Secrets => {
  const { secrets } = splitSecrets(next)
  if (!sameTarget) return secrets
  const kept: Record<string, string> = {}
  const nextRecord = next as Record<string, any>
  for (const [path, value] of Object.entries(previous)) {
    const [head, field] = path.split(".") as [string, string | undefined]
    const stillApplies = field === undefined || nextRecord[head] !== undefined
    if (stillApplies) kept[path] = value
  }
  return { ...kept, ...secrets }
}
