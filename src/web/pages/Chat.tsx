import { type FormEvent, useState } from "react"
import type { Message } from "../../domain/Chat"
import { answerReport } from "../../domain/Report"
import { formatUsd } from "../../domain/Usd"
import { useAction, useApi } from "../client/useApi"
import { ConnectionPicker, useChosenConnection } from "../components/ConnectionPicker"
import { RunSteps } from "../components/RunSteps"
import { Empty, ErrorBanner, Loaded } from "../components/States"
import { formatTime } from "../format"

const ACTIVE: ReadonlySet<string> = new Set(["queued", "running", "waiting_for_user", "waiting_for_query_approval"])

export const ChatPage = () => {
  const [conversations, reload] = useApi((client) => client.chat.list({ urlParams: { limit: 100 } }))
  const [open, setOpen] = useState<string | null>(null)
  const { connections, chosen, choose } = useChosenConnection()
  const start = useAction()
  const items = conversations.state === "ready" ? conversations.value.items : []
  const current = open ?? items[0]?.id ?? null
  const startConversation = async () => {
    const made = await start.perform((client) => client.chat.start({ payload: chosen === "" ? {} : { connection_name: chosen } }))
    if (made !== undefined) {
      setOpen(made.id)
      reload()
    }
  }
  return (
    <section aria-labelledby="chat-title" className="chat">
      <h1 id="chat-title">Chat</h1>
      <ModelKey />
      <div className="chat-layout">
        <aside aria-label="Conversations" className="chat-list">
          <div className="row">
            {connections.state === "ready" && connections.value.items.length > 0 && (
              <ConnectionPicker items={connections.value.items} value={chosen} onChange={choose} />
            )}
            <button type="button" className="primary" onClick={startConversation} disabled={start.pending}>
              New conversation
            </button>
          </div>
          <ErrorBanner error={start.error} />
          <Loaded value={conversations} what="conversations" onRetry={reload}>
            {(page) =>
              page.items.length === 0 ? (
                <Empty>No conversations yet: start one and ask about your data.</Empty>
              ) : (
                <ul className="plain">
                  {page.items.map((c) => (
                    <li key={c.id}>
                      <button type="button" className={c.id === current ? "link current" : "link"} aria-current={c.id === current ? "true" : undefined} onClick={() => setOpen(c.id)}>
                        {c.title}
                      </button>
                      <span className="muted small"> {formatTime(c.updated_at)}</span>
                    </li>
                  ))}
                </ul>
              )
            }
          </Loaded>
        </aside>
        {current !== null && <Conversation key={current} id={current} onActivity={reload} />}
      </div>
    </section>
  )
}

/** Whether the organization's model key is set, and a form to set it (bring your own key). */
const ModelKey = () => {
  const [secrets, reload] = useApi((client) => client.secrets.listOrganization())
  const [value, setValue] = useState("")
  const save = useAction()
  const set = secrets.state === "ready" && secrets.value.secrets.some((s) => s.name === "llm_api_key")
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    if ((await save.perform((client) => client.secrets.putOrganization({ payload: { secrets: { llm_api_key: value } } }))) !== undefined) {
      setValue("")
      reload()
    }
  }
  return (
    <details className="card" open={secrets.state === "ready" && !set}>
      <summary>Model key: {secrets.state !== "ready" ? "…" : set ? "set for this organization" : "not set (the gateway's own key is used if it has one)"}</summary>
      <form onSubmit={submit} aria-label="Set the model key">
        <label>
          API key of the model provider (Anthropic, or the OpenAI-compatible endpoint the gateway is set up for)
          <input type="password" value={value} onChange={(e) => setValue(e.target.value)} required autoComplete="off" />
        </label>
        <ErrorBanner error={save.error} />
        <button type="submit" disabled={save.pending}>
          {save.pending ? "Saving…" : "Save key"}
        </button>
        <p className="muted small">Stored encrypted; never shown again.</p>
      </form>
    </details>
  )
}

const Conversation = ({ id, onActivity }: { readonly id: string; readonly onActivity: () => void }) => {
  const [messages, reload] = useApi((client) => client.chat.messages({ path: { id } }), [id])
  const [draft, setDraft] = useState("")
  const send = useAction()
  const items = messages.state === "ready" ? messages.value.items : []
  const last = items.at(-1)
  const busy = last !== undefined && last.role === "assistant" && last.status !== null && ACTIVE.has(last.status)
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    if ((await send.perform((client) => client.chat.post({ path: { id }, payload: { content: draft } }))) !== undefined) {
      setDraft("")
      reload()
      onActivity()
    }
  }
  return (
    <div className="chat-thread">
      <Loaded value={messages} what="messages" onRetry={reload}>
        {() =>
          items.length === 0 ? (
            <Empty>Ask a question about the connected data. The agent answers with governed, read-only queries, each one in the audit log.</Empty>
          ) : (
            <ol className="messages" aria-label="Messages">
              {items.map((message, index) => (
                <MessageView key={message.id} conversation={id} message={message} question={items[index - 1]?.content ?? null} onChange={reload} />
              ))}
            </ol>
          )
        }
      </Loaded>
      <form onSubmit={submit} aria-label="Send a message" className="composer">
        <label>
          Message
          <textarea value={draft} onChange={(e) => setDraft(e.target.value)} required maxLength={20_000} rows={3} placeholder="How many orders did each customer place last month?" />
        </label>
        <ErrorBanner error={send.error} />
        <button type="submit" className="primary" disabled={send.pending || busy}>
          {busy ? "The agent is working…" : "Send"}
        </button>
      </form>
    </div>
  )
}

const MessageView = ({ conversation, message, question, onChange }: {
  readonly conversation: string
  readonly message: Message
  readonly question: string | null
  readonly onChange: () => void
}) => {
  if (message.role === "user") {
    return (
      <li className="message user">
        <span className="visually-hidden">You: </span>
        <p>{message.content}</p>
      </li>
    )
  }
  const live = message.status !== null && ACTIVE.has(message.status)
  return (
    <li className="message assistant" aria-busy={live}>
      <span className="visually-hidden">Agent: </span>
      <RunSteps path={`/api/chat/conversations/${conversation}/runs/${message.run_id}/events`} answered={message.content !== null} {...(live ? { onEvent: onChange } : {})} />
      {message.content !== null && <p className="answer">{message.content}</p>}
      {message.content !== null && question !== null && <PublishAnswer question={question} answer={message.content} />}
      {message.status === "running" || message.status === "queued" ? (
        <p className="muted" role="status">
          Working…
        </p>
      ) : null}
      {message.error !== null && (
        <p className="error" role="alert">
          {message.error.message} <code className="code-tag">{message.error.code}</code>
        </p>
      )}
      {live && <Waiting conversation={conversation} message={message} onChange={onChange} />}
    </li>
  )
}

/** Publishes the question and the agent's answer as a report (an admin's action: reports are published by admins). */
const PublishAnswer = ({ question, answer }: { readonly question: string; readonly answer: string }) => {
  const act = useAction()
  const [published, setPublished] = useState(false)
  return (
    <div className="publish">
      {published ? (
        <span className="muted small" role="status">
          Published: see <a href="/reports">Reports</a>.
        </span>
      ) : (
        <button type="button" className="link" disabled={act.pending} onClick={async () => setPublished((await act.perform((client) => client.reports.create({ payload: { ...answerReport(question, answer), kind: "report", data: null } }))) !== undefined)}>
          Publish as report
        </button>
      )}
      <ErrorBanner error={act.error} />
    </div>
  )
}

/** What a live run waits for from the user: an answer, an approval, or nothing but a way to cancel it. */
const Waiting = ({ conversation, message, onChange }: { readonly conversation: string; readonly message: Message; readonly onChange: () => void }) => {
  const act = useAction()
  const [answer, setAnswer] = useState("")
  const path = { id: conversation, run_id: message.run_id }
  const done = (result: unknown) => result !== undefined && onChange()
  const pending = message.pending
  return (
    <div className="waiting">
      {pending?.kind === "question" && (
        <form
          aria-label="Answer the agent"
          onSubmit={async (event) => {
            event.preventDefault()
            done(await act.perform((client) => client.chat.clarify({ path, payload: { answer } })))
          }}
        >
          <label>
            The agent asks: {pending.question}
            <input value={answer} onChange={(e) => setAnswer(e.target.value)} required maxLength={20_000} />
          </label>
          <button type="submit" disabled={act.pending}>
            Answer
          </button>
        </form>
      )}
      {pending?.kind === "query_approval" && (
        <div className="notice" role="group" aria-label="Approve the query">
          <p>
            The agent wants to run this query on <strong>{pending.connection_name}</strong>, {pending.reason} (about {formatUsd(pending.estimated_usd)}):
          </p>
          <pre className="sql-line">{pending.sql}</pre>
          <button type="button" className="primary" disabled={act.pending} onClick={async () => done(await act.perform((client) => client.chat.approve({ path, payload: { decision: "approve" } })))}>
            Approve
          </button>{" "}
          <button type="button" disabled={act.pending} onClick={async () => done(await act.perform((client) => client.chat.approve({ path, payload: { decision: "decline" } })))}>
            Decline
          </button>
        </div>
      )}
      <button type="button" className="link" disabled={act.pending} onClick={async () => done(await act.perform((client) => client.chat.cancel({ path })))}>
        Cancel run
      </button>
      <ErrorBanner error={act.error} />
    </div>
  )
}
