/** What a request's headers say of its body, read the same way by the fast lane and the Effect app's pipeline. */
type Headers = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** The headers announce a body: a declared length over zero, or chunks. */
export const announcesBody = (headers: Headers) => Number(headers["content-length"] ?? 0) > 0 || headers["transfer-encoding"] !== undefined

/** A Content-Type that names JSON, parameters aside. */
export const declaresJson = (headers: Headers) => {
  const type = headers["content-type"]
  return typeof type === "string" && type.split(";")[0]!.trim().toLowerCase() === "application/json"
}
