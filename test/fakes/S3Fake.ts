import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import type * as http from "node:http"
import { listenFake } from "./FakeServer"

/**
 * A strict S3 on loopback, path-style, one bucket: what real S3 refuses, it refuses. Every request
 * is signed with SigV4 (header or presigned query) and checked; a signed payload hash is checked
 * against the body; multipart follows S3's rules (part numbers 1–10,000, parts of at least 5 MiB
 * but the last, ascending parts with their ETags on complete, NoSuchUpload after complete or abort);
 * a batch delete needs its body's checksum. Presigned URLs expire by a clock the test can move.
 */
export interface S3FakeOptions {
  readonly bucket?: string
  readonly accessKeyId?: string
  readonly secretAccessKey?: string
  readonly region?: string
}

interface StoredObject {
  readonly body: Buffer
  readonly etag: string
  readonly contentType: string
  readonly created: number
}
interface Upload {
  readonly key: string
  readonly created: number
  readonly parts: Map<number, { readonly body: Buffer; readonly etag: string }>
}

export interface S3Request {
  readonly method: string
  readonly path: string
  readonly query: string
  readonly presigned: boolean
  readonly bytes: number
}

const MIN_PART = 5 * 1024 * 1024

const xml = (res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/xml", ...headers })
  res.end(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`)
}
const escapeXml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")
const s3Error = (res: http.ServerResponse, status: number, code: string, message: string) =>
  xml(res, status, `<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message><RequestId>${randomBytes(8).toString("hex")}</RequestId></Error>`)

const md5 = (data: Buffer) => createHash("md5").update(data).digest("hex")
const sha256 = (data: Buffer | string) => createHash("sha256").update(data).digest("hex")
const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest()
// SigV4's URI encoding: RFC 3986 unreserved characters stay, everything else is %XX (S3 encodes the path once, keeping "/").
const awsEncode = (text: string, keepSlash: boolean) => {
  const encoded = encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return keepSlash ? encoded.replace(/%2F/g, "/") : encoded
}

const readBody = async (req: http.IncomingMessage) => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

export const startS3Fake = async (options: S3FakeOptions = {}) => {
  const bucket = options.bucket ?? "sluice-evidence"
  const accessKeyId = options.accessKeyId ?? "AKIAFAKEFAKEFAKE0001"
  const secretAccessKey = options.secretAccessKey ?? randomBytes(20).toString("base64")
  const region = options.region ?? "us-east-1"
  const objects = new Map<string, StoredObject>()
  const uploads = new Map<string, Upload>()
  // Real time, moved on by `advance`.
  let offset = 0
  const now = () => Date.now() + offset
  const requests: Array<S3Request> = []

  /** Checks the request's SigV4 signature; returns an error code and message, or null. */
  const verify = (req: http.IncomingMessage, url: URL, body: Buffer): [number, string, string] | null => {
    const presigned = url.searchParams.has("X-Amz-Signature")
    let credential: string, signedHeaders: string, signature: string, amzDate: string, payloadHash: string
    if (presigned) {
      if (url.searchParams.get("X-Amz-Algorithm") !== "AWS4-HMAC-SHA256") return [400, "AuthorizationQueryParametersError", "X-Amz-Algorithm must be AWS4-HMAC-SHA256"]
      credential = url.searchParams.get("X-Amz-Credential") ?? ""
      signedHeaders = url.searchParams.get("X-Amz-SignedHeaders") ?? ""
      signature = url.searchParams.get("X-Amz-Signature") ?? ""
      amzDate = url.searchParams.get("X-Amz-Date") ?? ""
      const expires = Number(url.searchParams.get("X-Amz-Expires"))
      if (!Number.isInteger(expires) || expires < 1 || expires > 604_800) return [400, "AuthorizationQueryParametersError", "X-Amz-Expires must be 1 to 604800 seconds"]
      const signedAt = Date.parse(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, "$1-$2-$3T$4:$5:$6Z"))
      if (!Number.isFinite(signedAt) || now() > signedAt + expires * 1000) return [403, "AccessDenied", "Request has expired"]
      payloadHash = "UNSIGNED-PAYLOAD"
    } else {
      const auth = req.headers.authorization ?? ""
      const match = /^AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth)
      if (match === null) return [403, "AccessDenied", "Access Denied"]
      ;[, credential = "", signedHeaders = "", signature = ""] = match
      amzDate = String(req.headers["x-amz-date"] ?? "")
      payloadHash = String(req.headers["x-amz-content-sha256"] ?? "")
      if (payloadHash === "") return [400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256"]
      if (payloadHash.startsWith("STREAMING-")) return [501, "NotImplemented", "aws-chunked uploads are not implemented by this fake"]
      if (payloadHash !== "UNSIGNED-PAYLOAD" && payloadHash !== sha256(body)) return [400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed."]
    }
    const [keyId, date, scopeRegion, service, terminator] = credential.split("/")
    if (keyId !== accessKeyId) return [403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."]
    if (scopeRegion !== region || service !== "s3" || terminator !== "aws4_request" || !amzDate.startsWith(date ?? "-")) {
      return [403, "SignatureDoesNotMatch", "The credential scope does not match"]
    }
    const headerNames = signedHeaders.split(";")
    if (!headerNames.includes("host")) return [403, "SignatureDoesNotMatch", "host must be signed"]
    const canonicalHeaders = headerNames.map((name) => `${name}:${String(req.headers[name] ?? "").trim().replace(/\s+/g, " ")}\n`).join("")
    const query = [...url.searchParams]
      .filter(([k]) => k !== "X-Amz-Signature")
      .map(([k, v]) => [awsEncode(k, false), awsEncode(v, false)] as const)
      .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join("&")
    const canonicalPath = awsEncode(decodeURIComponent(url.pathname), true)
    const canonical = [req.method, canonicalPath, query, canonicalHeaders, signedHeaders, payloadHash].join("\n")
    const scope = `${date}/${region}/s3/aws4_request`
    const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n")
    const key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date!), region), "s3"), "aws4_request")
    const expected = createHmac("sha256", key).update(toSign).digest()
    const given = Buffer.from(signature, "hex")
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return [403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."]
    }
    return null
  }

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://fake")
    const body = await readBody(req)
    const presigned = url.searchParams.has("X-Amz-Signature")
    requests.push({ method: req.method ?? "", path: url.pathname, query: [...url.searchParams.keys()].filter((k) => !k.startsWith("X-Amz-")).join("&"), presigned, bytes: body.length })
    const refusal = verify(req, url, body)
    if (refusal !== null) return s3Error(res, ...refusal)
    const [, bucketName = "", ...rest] = url.pathname.split("/")
    if (bucketName !== bucket) return s3Error(res, 404, "NoSuchBucket", "The specified bucket does not exist")
    const key = decodeURIComponent(rest.join("/"))
    const q = url.searchParams
    const method = req.method ?? "GET"
    const declared = req.headers["content-length"]
    if ((method === "PUT" || method === "POST") && declared === undefined && req.headers["transfer-encoding"] !== undefined) {
      return s3Error(res, 411, "MissingContentLength", "You must provide the Content-Length HTTP header.")
    }

    if (key === "") {
      if (method === "GET" && q.get("list-type") === "2") {
        const prefix = q.get("prefix") ?? ""
        const max = Math.min(Number(q.get("max-keys") ?? 1000), 1000)
        const after = q.has("continuation-token") ? Buffer.from(q.get("continuation-token")!, "base64url").toString("utf8") : (q.get("start-after") ?? "")
        const keys = [...objects.keys()].filter((k) => k.startsWith(prefix) && k > after).sort()
        const page = keys.slice(0, max)
        const truncated = keys.length > max
        return xml(res, 200, `<ListBucketResult><Name>${bucket}</Name><Prefix>${escapeXml(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>${truncated ? `<NextContinuationToken>${Buffer.from(page.at(-1)!).toString("base64url")}</NextContinuationToken>` : ""}${page.map((k) => `<Contents><Key>${escapeXml(k)}</Key><Size>${objects.get(k)!.body.length}</Size><ETag>&quot;${objects.get(k)!.etag}&quot;</ETag><LastModified>${new Date(objects.get(k)!.created).toISOString()}</LastModified><StorageClass>STANDARD</StorageClass></Contents>`).join("")}</ListBucketResult>`)
      }
      if (method === "POST" && q.has("delete")) {
        if (req.headers["content-md5"] === undefined && !Object.keys(req.headers).some((h) => h.startsWith("x-amz-checksum-"))) {
          return s3Error(res, 400, "InvalidRequest", "Missing required header for this request: Content-MD5 or a checksum")
        }
        const keys = [...body.toString("utf8").matchAll(/<Object>\s*<Key>([^<]*)<\/Key>/g)].map(([, k = ""]) => k.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&amp;/g, "&"))
        if (keys.length === 0 || keys.length > 1000) return s3Error(res, 400, "MalformedXML", "A delete request names 1 to 1000 keys")
        for (const k of keys) objects.delete(k)
        return xml(res, 200, `<DeleteResult>${keys.map((k) => `<Deleted><Key>${escapeXml(k)}</Key></Deleted>`).join("")}</DeleteResult>`)
      }
      return s3Error(res, 501, "NotImplemented", "This bucket operation is not implemented by the fake")
    }
    if (key.length > 1024) return s3Error(res, 400, "KeyTooLongError", "Your key is too long")

    if (q.has("uploads") && method === "POST") {
      const id = randomBytes(24).toString("base64url")
      uploads.set(id, { key, created: now(), parts: new Map() })
      return xml(res, 200, `<InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${escapeXml(key)}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`)
    }
    if (q.has("uploadId")) {
      const id = q.get("uploadId")!
      const upload = uploads.get(id)
      if (upload === undefined || upload.key !== key) return s3Error(res, 404, "NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
      if (method === "PUT") {
        const n = Number(q.get("partNumber"))
        if (!Number.isInteger(n) || n < 1 || n > 10_000) return s3Error(res, 400, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive")
        if (declared !== undefined && Number(declared) !== body.length) return s3Error(res, 400, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header")
        const etag = md5(body)
        upload.parts.set(n, { body, etag })
        res.writeHead(200, { etag: `"${etag}"` }).end()
        return
      }
      if (method === "GET") {
        const parts = [...upload.parts].sort(([a], [b]) => a - b)
        return xml(res, 200, `<ListPartsResult><Bucket>${bucket}</Bucket><Key>${escapeXml(key)}</Key><UploadId>${id}</UploadId><IsTruncated>false</IsTruncated>${parts.map(([n, p]) => `<Part><PartNumber>${n}</PartNumber><ETag>&quot;${p.etag}&quot;</ETag><Size>${p.body.length}</Size></Part>`).join("")}</ListPartsResult>`)
      }
      if (method === "DELETE") {
        uploads.delete(id)
        res.writeHead(204).end()
        return
      }
      if (method === "POST") {
        const listed = [...body.toString("utf8").matchAll(/<Part>([\s\S]*?)<\/Part>/g)].map(([, part = ""]) => ({
          n: Number(/<PartNumber>(\d+)<\/PartNumber>/.exec(part)?.[1]),
          etag: (/<ETag>([^<]*)<\/ETag>/.exec(part)?.[1] ?? "").replace(/&quot;|"/g, "")
        }))
        if (listed.length === 0) return s3Error(res, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema")
        for (let i = 1; i < listed.length; i++) if (listed[i]!.n <= listed[i - 1]!.n) return s3Error(res, 400, "InvalidPartOrder", "The list of parts was not in ascending order. Parts must be ordered by part number.")
        const chosen: Array<Buffer> = []
        for (const [i, { n, etag }] of listed.entries()) {
          const part = upload.parts.get(n)
          if (part === undefined || part.etag !== etag) return s3Error(res, 400, "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
          if (i < listed.length - 1 && part.body.length < MIN_PART) return s3Error(res, 400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
          chosen.push(part.body)
        }
        const etag = `${md5(Buffer.concat(listed.map(({ n }) => Buffer.from(upload.parts.get(n)!.etag, "hex"))))}-${listed.length}`
        objects.set(key, { body: Buffer.concat(chosen), etag, contentType: "application/octet-stream", created: now() })
        uploads.delete(id)
        return xml(res, 200, `<CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${escapeXml(key)}</Key><ETag>&quot;${etag}&quot;</ETag></CompleteMultipartUploadResult>`)
      }
    }
    if (method === "PUT") {
      if (declared === undefined) return s3Error(res, 411, "MissingContentLength", "You must provide the Content-Length HTTP header.")
      if (body.length > MIN_PART * 1024) return s3Error(res, 400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size.")
      const etag = md5(body)
      objects.set(key, { body, etag, contentType: String(req.headers["content-type"] ?? "application/octet-stream"), created: now() })
      res.writeHead(200, { etag: `"${etag}"` }).end()
      return
    }
    const object = objects.get(key)
    if (method === "GET" || method === "HEAD") {
      if (object === undefined) {
        if (method === "HEAD") return void res.writeHead(404).end()
        return s3Error(res, 404, "NoSuchKey", "The specified key does not exist.")
      }
      const range = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ""))
      const from = range === null ? 0 : Number(range[1])
      const to = range === null || range[2] === "" ? object.body.length - 1 : Math.min(Number(range[2]), object.body.length - 1)
      const slice = object.body.subarray(from, to + 1)
      res.writeHead(range === null ? 200 : 206, {
        "content-type": object.contentType,
        "content-length": String(slice.length),
        etag: `"${object.etag}"`,
        "last-modified": new Date(object.created).toUTCString(),
        ...(range === null ? {} : { "content-range": `bytes ${from}-${to}/${object.body.length}` })
      })
      res.end(method === "HEAD" ? undefined : slice)
      return
    }
    if (method === "DELETE") {
      objects.delete(key)
      res.writeHead(204).end()
      return
    }
    return s3Error(res, 405, "MethodNotAllowed", "The specified method is not allowed against this resource.")
  }

  const { server, port } = await listenFake(handle)
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    region,
    accessKeyId,
    secretAccessKey,
    requests,
    objects,
    uploads,
    /** Moves the fake's clock (presigned URLs expire by it). */
    advance: (ms: number) => {
      offset += ms
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
export type S3Fake = Awaited<ReturnType<typeof startS3Fake>>
