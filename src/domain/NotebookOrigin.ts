/**
 * Where notebook sessions are served: an origin per session, from a template whose leftmost label
 * is `*` (`http://*.localhost:3400`, `https://*.notebooks.example.com`). A session's pages run
 * whatever its notebooks write; an origin of its own keeps them from acting on another session
 * (cookies, storage and service workers are the origin's) and on the gateway's.
 */
export interface NotebookOrigins {
  readonly scheme: "http" | "https"
  /** The host every session's name is a label of (`localhost`, `notebooks.example.com`). */
  readonly suffix: string
  /** The port in the origin, when it names one. */
  readonly port: string
}

const TEMPLATE = /^(https?):\/\/\*\.([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)(?::(\d{1,5}))?\/?$/
const SESSION_LABEL = /^nb-([0-9a-f]{32})$/

/** The template read, or null where it is not `scheme://*.host[:port]`. */
export const parseNotebookOrigins = (template: string): NotebookOrigins | null => {
  const match = TEMPLATE.exec(template.toLowerCase())
  if (match === null) return null
  return { scheme: match[1] as "http" | "https", suffix: match[2]!, port: match[6] ?? "" }
}

const hostOf = (origins: NotebookOrigins, id: string) => `nb-${id.slice("nb_".length)}.${origins.suffix}${origins.port === "" ? "" : `:${origins.port}`}`

/** The template as the operator wrote it: `scheme://*.suffix[:port]`. */
export const originsTemplate = (origins: NotebookOrigins) => sessionOrigin(origins, "nb_").replace("nb-.", "*.")

/** The origin of session `id` (`nb_<32 hex>`). */
export const sessionOrigin = (origins: NotebookOrigins, id: string) => `${origins.scheme}://${hostOf(origins, id)}`

/** The session a request's Host names, when it names one in the template's form; else null. */
export const sessionOfHost = (origins: NotebookOrigins, host: string | undefined): string | null => {
  if (host === undefined) return null
  const lowered = host.toLowerCase()
  const expected = origins.port === "" ? `.${origins.suffix}` : `.${origins.suffix}:${origins.port}`
  if (!lowered.endsWith(expected)) return null
  const label = SESSION_LABEL.exec(lowered.slice(0, lowered.length - expected.length))
  return label === null ? null : `nb_${label[1]}`
}
