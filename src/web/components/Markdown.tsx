import { Fragment, type ReactNode } from "react"

/** `code`, **bold** and *italic* within a line, as React text: nothing of it is ever HTML. */
const inline = (text: string): ReactNode[] =>
  text.split(/(`[^`]+`|\*\*[^*]+\*\*|\*[^*\s][^*]*\*)/g).map((part, i) =>
    part.startsWith("`") && part.endsWith("`") && part.length > 1 ? (
      <code key={i}>{part.slice(1, -1)}</code>
    ) : part.startsWith("**") && part.endsWith("**") && part.length > 3 ? (
      <strong key={i}>{part.slice(2, -2)}</strong>
    ) : part.startsWith("*") && part.endsWith("*") && part.length > 2 ? (
      <em key={i}>{part.slice(1, -1)}</em>
    ) : (
      <Fragment key={i}>{part}</Fragment>
    )
  )

/**
 * The markdown knowledge entries are written in, as elements: headings, paragraphs, lists, fenced
 * code and inline code, bold and italic. Never as HTML: an entry's text cannot add markup or script.
 */
export const Markdown = ({ text }: { readonly text: string }) => {
  const blocks: ReactNode[] = []
  const lines = text.replace(/\r\n?/g, "\n").split("\n")
  for (let i = 0; i < lines.length; ) {
    const line = lines[i]!
    if (line.startsWith("```")) {
      const code: string[] = []
      for (i += 1; i < lines.length && !lines[i]!.startsWith("```"); i++) code.push(lines[i]!)
      blocks.push(<pre key={blocks.length}>{code.join("\n")}</pre>)
      i += 1
    } else if (/^#{1,6} /.test(line)) {
      const level = Math.min(6, line.indexOf(" ") + 2)
      const Heading = `h${level}` as "h3"
      blocks.push(<Heading key={blocks.length}>{inline(line.replace(/^#+ /, ""))}</Heading>)
      i += 1
    } else if (/^\s*([-*]|\d+\.) /.test(line)) {
      const items: string[] = []
      for (; i < lines.length && /^\s*([-*]|\d+\.) /.test(lines[i]!); i++) items.push(lines[i]!.replace(/^\s*([-*]|\d+\.) /, ""))
      blocks.push(
        <ul key={blocks.length}>
          {items.map((item, n) => (
            <li key={n}>{inline(item)}</li>
          ))}
        </ul>
      )
    } else if (line.trim() === "") {
      i += 1
    } else {
      const paragraph: string[] = []
      for (; i < lines.length && lines[i]!.trim() !== "" && !/^(#{1,6} |```|\s*([-*]|\d+\.) )/.test(lines[i]!); i++) paragraph.push(lines[i]!)
      blocks.push(<p key={blocks.length}>{inline(paragraph.join(" "))}</p>)
    }
  }
  return <div className="markdown">{blocks}</div>
}
