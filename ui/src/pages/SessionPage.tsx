import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router-dom';
import { api, type PermissionMode, type Session } from '../api/client';
import { Card, ErrorNote, Loading, MODELS, PERMISSION_MODES, StatusBadge } from '../components/ui';
import { Transcript } from '../components/Transcript';
import { ago, count, isLive, usd } from '../lib/format';
import { buildTranscript } from '../lib/transcript';
import { useLoad } from '../lib/useLoad';
import { useLive } from '../store/live';

export function SessionPage() {
  const { sessionId = '' } = useParams();
  const tick = useLive((s) => s.bySession[sessionId] ?? 0);
  const session = useLoad(() => api.session(sessionId), [sessionId, tick]);
  const messages = useLoad(() => api.messages(sessionId), [sessionId, tick]);
  const decisions = useLoad(() => api.decisions({ session_id: sessionId, limit: 1000 }), [sessionId, tick]);
  const items = useMemo(() => buildTranscript(messages.data ?? [], decisions.data ?? []), [messages.data, decisions.data]);
  const [actionError, setActionError] = useState<string>();
  const bottom = useRef<HTMLDivElement>(null);
  // Braces matter: newer browsers return a Promise from scrollIntoView, and an effect may return
  // nothing but a cleanup function.
  useEffect(() => {
    bottom.current?.scrollIntoView?.({ block: 'end' });
  }, [items.length]);

  if (session.loading) return <Loading />;
  if (!session.data) return <ErrorNote error={session.error ?? 'This session does not exist.'} what="open this session" />;
  const s = session.data;
  const act = async (what: () => Promise<unknown>) => {
    try {
      setActionError(undefined);
      await what();
      session.reload();
    } catch (e) {
      setActionError((e as Error).message);
    }
  };
  const live = isLive(s.status);

  return (
    <div className="page session-page">
      <div className="page-head">
        <div>
          <div className="crumbs">
            <Link to={`/projects/${s.project_id}`}>← Project</Link>
          </div>
          <h1>
            {s.name} <StatusBadge status={s.status} />
          </h1>
          <div className="muted small">
            Started {ago(s.created_at)} · last active {ago(s.last_active_at)}
            {s.session_id && <span className="mono"> · CLI session {s.session_id.slice(0, 8)}</span>}
          </div>
        </div>
        <div className="totals" data-testid="session-totals">
          <Total label="Cost" value={usd(s.total_cost_usd)} />
          <Total label="Turns" value={String(s.num_turns)} />
          <Total label="Tokens in / out" value={`${count(s.total_input_tokens)} / ${count(s.total_output_tokens)}`} />
        </div>
      </div>
      {s.error_message && <ErrorNote error={s.error_message} what="keep the CLI running" />}
      {/* Keyed on the model too: the field shows the model the CLI reports once it is known. */}
      {live && <Controls key={`${s.id}:${s.model ?? ''}`} session={s} act={act} />}
      <ErrorNote error={actionError} />
      <Card title="Transcript" className="transcript-card">
        <ErrorNote error={messages.error} what="load the transcript" />
        {messages.loading ? <Loading /> : <Transcript items={items} />}
        <div ref={bottom} />
      </Card>
      {live ? (
        <MessageBox session={s} onSent={() => messages.reload()} />
      ) : (
        <div className="ended-note">This session has ended ({s.status}); its transcript stays here.</div>
      )}
    </div>
  );
}

function Total(props: { label: string; value: string }) {
  return (
    <div className="total">
      <div className="tile-label">{props.label}</div>
      <div className="total-value">{props.value}</div>
    </div>
  );
}

function Controls({ session, act }: { session: Session; act: (f: () => Promise<unknown>) => Promise<void> }) {
  const [model, setModel] = useState(session.model ?? '');
  return (
    <div className="controls">
      <form
        className="control"
        onSubmit={(e) => {
          e.preventDefault();
          if (model.trim()) void act(() => api.setModel(session.id, model.trim()));
        }}
      >
        <input value={model} onChange={(e) => setModel(e.target.value)} list="session-models" aria-label="Model" />
        <datalist id="session-models">
          {MODELS.map((m) => (
            <option key={m} value={m} />
          ))}
        </datalist>
        <button className="button small">Set model</button>
      </form>
      <label className="control">
        Mode
        <select
          aria-label="Permission mode"
          value={session.permission_mode ?? 'default'}
          onChange={(e) => void act(() => api.setMode(session.id, e.target.value as PermissionMode))}
        >
          {PERMISSION_MODES.map((m) => (
            <option key={m}>{m}</option>
          ))}
        </select>
      </label>
      <div className="spacer" />
      <button className="button" disabled={session.status !== 'active'} onClick={() => void act(() => api.interrupt(session.id))}>
        Interrupt
      </button>
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

function MessageBox({ session, onSent }: { session: Session; onSent: () => void }) {
  const [text, setText] = useState('');
  const [error, setError] = useState<string>();
  const [note, setNote] = useState<string>();
  const send = async (e?: FormEvent) => {
    e?.preventDefault();
    if (!text.trim()) return;
    try {
      const outcome = await api.send(session.id, text);
      setText('');
      setError(undefined);
      setNote(outcome.queued ? `Queued: ${outcome.position} turn(s) ahead.` : undefined);
      onSent();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form className="message-box" onSubmit={send}>
      <textarea
        value={text}
        onChange={(e) => setText(e.target.value)}
        placeholder="Message Claude… (Ctrl+Enter to send)"
        aria-label="Message"
        rows={3}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void send();
        }}
      />
      <div className="message-box-foot">
        <span className="muted small">{note ?? (session.status === 'active' ? 'A turn is running; a new message waits for it.' : '')}</span>
        <ErrorNote error={error} what="send" />
        <button className="button primary">Send</button>
      </div>
    </form>
  );
}
