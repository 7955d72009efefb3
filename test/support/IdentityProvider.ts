import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose"

const KID = "sluice-test-key"
export const now = () => Math.floor(Date.now() / 1000)

type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"]

export interface TokenOptions {
  readonly sub?: string | null
  readonly orgId?: unknown
  readonly admin?: boolean
  /** Absolute `exp` in seconds; null leaves the claim out. Default: one hour from now. */
  readonly exp?: number | null
  /** Signs with another key pair under the same kid: a forgery. */
  readonly forged?: boolean
  /** The `iss` and `aud` claims; left out when not given. */
  readonly issuer?: string
  readonly audience?: string
}

/** A cloud identity provider for tests: a JWKS endpoint and the session tokens it would issue. */
export const startIdentityProvider = async () => {
  const pair = await generateKeyPair("RS256")
  const stranger = (await generateKeyPair("RS256")).privateKey as SigningKey
  const body = JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: KID, alg: "RS256", use: "sig" }] })
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const token = (options: TokenOptions = {}): Promise<string> => {
    const claims: JWTPayload = {}
    if (options.orgId !== undefined) claims["org_id"] = options.orgId
    if (options.admin) claims["org_role"] = "org:admin"
    let jwt = new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: KID }).setIssuedAt()
    if (options.issuer !== undefined) jwt = jwt.setIssuer(options.issuer)
    if (options.audience !== undefined) jwt = jwt.setAudience(options.audience)
    if (options.sub !== null) jwt = jwt.setSubject(options.sub ?? "user_default")
    const exp = options.exp === undefined ? now() + 3600 : options.exp
    if (exp !== null) jwt = jwt.setExpirationTime(exp)
    return jwt.sign(options.forged ? stranger : pair.privateKey)
  }
  return {
    jwksUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`,
    token,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
export type IdentityProvider = Awaited<ReturnType<typeof startIdentityProvider>>
