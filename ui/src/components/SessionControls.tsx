// What can be done to a session from its page: change its model or permission mode (the lists
// the CLI itself offers), interrupt the turn, end it, bring an ended one back or fork it, and
// write to it.
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { ApiError, api, type PermissionMode, type Session } from '../api/client';
import type { SessionOptions } from '../api/sessions';
import { messageOf } from '../lib/errors';
import { agentLabel } from './TranscriptEntry';
import { ErrorNote, PERMISSION_MODES } from './ui';

export type Act = (what: () => Promise<unknown>) => Promise<boolean>;

/**
 * An action's failure in words: a control the CLI refused says the CLI's reason; a message,
 * resume or fork refused for a spent budget (402) the service's words on which budget it is and
 * when it resets (lib/errors.ts).
 */
export function describeFailure(e: unknown): string {
  if (e instanceof ApiError && e.code === 'refused_by_cli') return `The CLI refused: ${e.message}`;
  return messageOf(e);
}

/** Why a session was left rather than ended, when a message to it starts it again (the API resumes it). */
const LEFT: Record<string, string> = {
  idle_timeout: 'This session was closed for being idle',
  shutdown: 'This session was closed when the service stopped',
  service_restarted: 'This session was ended by a restart of the service',
  stalled: 'This session was stopped because its turn went silent',
  crashed: 'This session ended when its keeper was lost',
};

/** What the service says of a session paused on request (a budget's hold names the budget). */
const PAUSED_ON_REQUEST = 'paused on request';

/** Frozen on request (its processes stopped where they are), as against held by a budget. */
export function pausedOnRequest(session: Session): boolean {
  return session.status === 'paused' && session.status_reason === PAUSED_ON_REQUEST;
}

/** What a session that a message starts again was left by, or undefined when it ended otherwise. */
export function leftBy(session: Session): string | undefined {
  if (session.status !== 'closed' && session.status !== 'error') return undefined;
  return LEFT[(session.closed_reason as string | null | undefined) ?? ''];
}

/** `children`: more buttons, before the ones that stop things. */
export function Controls(props: { session: Session; options?: SessionOptions; act: Act; children?: ReactNode }) {
  const { session, options, act } = props;
  const [model, setModel] = useState(session.model ?? '');
  const current = session.permission_mode ?? 'default';
  // The modes the CLI named; before it answers (or from an older service), the contract's six.
  const named: readonly string[] = options ? options.modes : PERMISSION_MODES;
  const modes = named.includes(current) || named.length === 0 ? named : [current, ...named];
  return (
    <div className="controls">
      <form
        className="control"
        onSubmit={(e) => {
          e.preventDefault();
          if (model.trim()) void act(() => api.setModel(session.id, model.trim()));
        }}
      >
        <input value={model} onChange={(e) => setModel(e.target.value)} list="session-models" aria-label="Model" placeholder="CLI default" />
        <datalist id="session-models">
          {(options?.models ?? []).map((m) => (
            <option key={m.value} value={m.value}>
              {m.name && m.name !== m.value ? m.name : (m.description ?? '')}
            </option>
          ))}
        </datalist>
        <button className="button small">Set model</button>
      </form>
      {modes.length > 0 && (
        <label className="control">
          Mode
          <select
            aria-label="Permission mode"
            value={current}
            onChange={(e) => void act(() => api.setMode(session.id, e.target.value as PermissionMode))}
          >
            {modes.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </label>
      )}
      <div className="spacer" />
      {props.children}
      <button className="button" disabled={session.status !== 'active'} onClick={() => void act(() => api.interrupt(session.id))}>
        Interrupt
      </button>
      {pausedOnRequest(session) ? (
        <button className="button" onClick={() => void act(() => api.unpause(session.id))} title="Let its processes run again">
          Unpause
        </button>
      ) : (
        <button
          className="button"
          disabled={!['idle', 'active', 'compacting', 'waiting_for_limit'].includes(session.status)}
          onClick={() => void act(() => api.pause(session.id))}
          title="Freeze its CLI and everything it started; messages wait"
        >
          Pause
        </button>
      )}
      <button
        className="button danger"
        onClick={() => {
          if (window.confirm('End this session? Its CLI and everything it started are stopped.')) void act(() => api.kill(session.id));
        }}
      >
        Kill session
      </button>
    </div>
  );
}

/** Resume (ended sessions) and fork (any session whose CLI told its session id). */
export function SurvivalButtons(props: { session: Session; onResume: () => void; onFork: () => void }) {
  const { session } = props;
  const ended = session.status === 'closed' || session.status === 'error';
  if (!session.session_id) return null;
  return (
    <>
      {ended && (
        <button className="button primary" onClick={props.onResume} title="Start its CLI again with this conversation">
          Resume
        </button>
      )}
      <button className="button" onClick={props.onFork} title="A new session that continues from this conversation">
        Fork
      </button>
    </>
  );
}

const HINTS: Partial<Record<Session['status'], string>> = {
  active: 'A turn is running; a new message waits for it.',
  waiting_for_limit: 'Waiting for a usage limit; a new message is queued and sent after it resets.',
  paused: 'Paused: a budget is spent, so the service refuses new messages until it allows more.',
};

/** `epoch` changes on reconnecting: an error from before says nothing about now. */
export function MessageBox(props: { session: Session; epoch: number; onSent: (text: string) => void }) {
  const { session } = props;
  const [text, setText] = useState('');
  const [error, setError] = useState<string>();
  const [note, setNote] = useState<string>();
  useEffect(() => setError(undefined), [props.epoch]);
  const [sending, setSending] = useState(false);
  const send = async (e?: FormEvent) => {
    e?.preventDefault();
    if (!text.trim() || sending) return;
    setSending(true);
    try {
      const outcome = await api.send(session.id, text);
      props.onSent(text);
      setText('');
      setError(undefined);
      setNote(outcome.queued ? `Queued: ${outcome.position} turn(s) ahead.` : undefined);
    } catch (err) {
      setError(describeFailure(err));
    } finally {
      setSending(false);
    }
  };
  const left = leftBy(session);
  const hint = left
    ? `${left}; a message starts it again.`
    : pausedOnRequest(session)
      ? 'Paused: its processes are frozen; a new message waits until it is unpaused.'
      : HINTS[session.status] ?? '';
  return (
    <form className="message-box" onSubmit={send}>
      <textarea
        value={text}
        onChange={(e) => setText(e.target.value)}
        placeholder={`Message ${agentLabel(session.agent)}… (Ctrl+Enter to send)`}
        aria-label="Message"
        rows={3}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void send();
        }}
      />
      <div className="message-box-foot">
        <span className="muted small">{note ?? hint}</span>
        <ErrorNote error={error} what="send" />
        <button className="button primary" disabled={sending}>
          Send
        </button>
      </div>
    </form>
  );
}
