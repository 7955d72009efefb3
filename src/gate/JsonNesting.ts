/** How deep a request's JSON may nest: deeper bodies are refused before they are decoded (decoding and its error reports recurse per level). */
export const MAX_JSON_NESTING = 100

/** Whether JSON text nests arrays and objects deeper than `max`, in one pass that skips strings. */
export const nestsDeeperThan = (text: string, max: number) => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: the next character is escaped
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 || c === 123) {
      if (++depth > max) return true
    } else if (c === 93 || c === 125) depth--
  }
  return false
}
