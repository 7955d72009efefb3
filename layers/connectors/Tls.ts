import { isIP } from "node:net"
import { checkServerIdentity, type ConnectionOptions } from "node:tls"
import type { Tls } from "../../src/domain/Connection"

/**
 * TLS options for Node drivers. Node drivers cannot fall back from TLS to plain text, so "prefer"
 * means TLS without verification (as "require" does) and "allow" means plain text. `serverName` is
 * the database's own host name, which verify-full checks even when the driver dials an SSH tunnel.
 */
export const tlsOptions = (tls: Tls | undefined, serverName?: string): ConnectionOptions | null => {
  if (tls === undefined || tls.mode === "disable" || tls.mode === "allow") return null
  const material = {
    ...(tls.ca_pem ? { ca: tls.ca_pem } : {}),
    ...(tls.client_cert_pem ? { cert: tls.client_cert_pem } : {}),
    ...(tls.client_key_pem ? { key: tls.client_key_pem } : {})
  }
  if (tls.mode === "prefer" || tls.mode === "require") return { ...material, rejectUnauthorized: false }
  if (tls.mode === "verify-ca") return { ...material, rejectUnauthorized: true, checkServerIdentity: () => undefined }
  if (serverName === undefined) return { ...material, rejectUnauthorized: true }
  return {
    ...material,
    rejectUnauthorized: true,
    // SNI carries host names only; an address is still checked against the certificate.
    ...(isIP(serverName) === 0 ? { servername: serverName } : {}),
    checkServerIdentity: (_dialled, cert) => checkServerIdentity(serverName, cert)
  }
}
