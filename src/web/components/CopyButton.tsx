import { useState } from "react"

export const CopyButton = ({ text, label = "Copy" }: { readonly text: string; readonly label?: string }) => {
  const [copied, setCopied] = useState(false)
  return (
    <button
      type="button"
      onClick={() =>
        navigator.clipboard?.writeText(text).then(
          () => (setCopied(true), setTimeout(() => setCopied(false), 2000)),
          () => setCopied(false)
        )
      }
    >
      {copied ? "Copied" : label}
    </button>
  )
}
