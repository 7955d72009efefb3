import { useEffect, useRef } from "react"
import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap } from "@codemirror/autocomplete"
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands"
import { sql } from "@codemirror/lang-sql"
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from "@codemirror/language"
import { Prec } from "@codemirror/state"
import { drawSelection, EditorView, highlightActiveLine, keymap, lineNumbers } from "@codemirror/view"

const editing = [
  lineNumbers(),
  history(),
  drawSelection(),
  indentOnInput(),
  bracketMatching(),
  closeBrackets(),
  autocompletion(),
  highlightActiveLine(),
  syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
  keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap])
]

/** CodeMirror 6 with SQL highlighting; Ctrl/Cmd+Enter runs. */
export const SqlEditor = ({ value, onChange, onRun }: { readonly value: string; readonly onChange: (sql: string) => void; readonly onRun: () => void }) => {
  const host = useRef<HTMLDivElement>(null)
  const view = useRef<EditorView | null>(null)
  const handlers = useRef({ onChange, onRun })
  handlers.current = { onChange, onRun }
  useEffect(() => {
    view.current = new EditorView({
      parent: host.current!,
      doc: value,
      extensions: [
        Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => (handlers.current.onRun(), true) }])),
        editing,
        sql(),
        EditorView.contentAttributes.of({ "aria-label": "SQL" }),
        EditorView.updateListener.of((update) => update.docChanged && handlers.current.onChange(update.state.doc.toString()))
      ]
    })
    return () => view.current?.destroy()
  }, [])
  return <div className="sql-editor" ref={host} />
}
