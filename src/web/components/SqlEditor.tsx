import { useEffect, useRef } from "react"
import { autocompletion, closeBrackets, closeBracketsKeymap, closeCompletion, completionKeymap } from "@codemirror/autocomplete"
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands"
import { type SQLConfig, sql } from "@codemirror/lang-sql"
import { bracketMatching, HighlightStyle, indentOnInput, syntaxHighlighting } from "@codemirror/language"
import { Compartment, Prec } from "@codemirror/state"
import { drawSelection, EditorView, highlightActiveLine, keymap, lineNumbers } from "@codemirror/view"
import { tags } from "@lezer/highlight"

// Colours from the page's variables (styles.css), so the editor follows the light and dark schemes with the rest of the app.
const sqlHighlight = HighlightStyle.define([
  { tag: tags.keyword, color: "var(--sql-keyword)", fontWeight: "600" },
  { tag: [tags.string, tags.special(tags.string)], color: "var(--sql-string)" },
  { tag: [tags.number, tags.bool, tags.null], color: "var(--sql-number)" },
  { tag: [tags.comment, tags.lineComment, tags.blockComment], color: "var(--muted)", fontStyle: "italic" },
  { tag: [tags.operator, tags.punctuation], color: "var(--text)" },
  { tag: [tags.typeName, tags.standard(tags.name)], color: "var(--sql-type)" }
])

const theme = EditorView.theme({
  "&": { color: "var(--text)", backgroundColor: "var(--panel)" },
  ".cm-content": { caretColor: "var(--text)" },
  ".cm-gutters": { backgroundColor: "var(--code)", color: "var(--muted)", borderRight: "1px solid var(--border)" },
  ".cm-activeLine": { backgroundColor: "var(--sql-active-line)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--sql-active-line)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground": { backgroundColor: "var(--sql-selection)" },
  ".cm-tooltip": { backgroundColor: "var(--panel)", color: "var(--text)", border: "1px solid var(--border)" }
})

const editing = [
  lineNumbers(),
  history(),
  drawSelection(),
  indentOnInput(),
  bracketMatching(),
  closeBrackets(),
  autocompletion(),
  highlightActiveLine(),
  syntaxHighlighting(sqlHighlight),
  theme,
  keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap])
]

/** CodeMirror 6 with SQL highlighting and completion from `config` (dialect, tables, columns); Ctrl/Cmd+Enter runs. */
export const SqlEditor = ({ value, onChange, onRun, config }: {
  readonly value: string
  readonly onChange: (sql: string) => void
  readonly onRun: () => void
  readonly config: SQLConfig
}) => {
  const host = useRef<HTMLDivElement>(null)
  const view = useRef<EditorView | null>(null)
  const language = useRef(new Compartment())
  const handlers = useRef({ onChange, onRun })
  handlers.current = { onChange, onRun }
  useEffect(() => {
    view.current = new EditorView({
      parent: host.current!,
      doc: value,
      extensions: [
        // Running also closes an open completion list, which would otherwise cover the results.
        Prec.highest(keymap.of([{ key: "Mod-Enter", run: (editor) => (closeCompletion(editor), handlers.current.onRun(), true) }])),
        editing,
        language.current.of(sql(config)),
        EditorView.contentAttributes.of({ "aria-label": "SQL" }),
        EditorView.updateListener.of((update) => update.docChanged && handlers.current.onChange(update.state.doc.toString()))
      ]
    })
    return () => view.current?.destroy()
  }, [])
  useEffect(() => {
    view.current?.dispatch({ effects: language.current.reconfigure(sql(config)) })
  }, [config])
  // A statement chosen elsewhere (the history) replaces the text; the editor's own edits already match.
  useEffect(() => {
    const current = view.current
    if (current !== null && current.state.doc.toString() !== value) current.dispatch({ changes: { from: 0, to: current.state.doc.length, insert: value } })
  }, [value])
  return <div className="sql-editor" ref={host} />
}
