import { useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useState } from 'react';
import type { Session } from '../api/client';
import { tools, type TerminalView } from '../api/tools';
import { keys } from '../query/client';
import { Card, ErrorNote } from './ui';

// xterm.js is a third of the dashboard's code: it loads when a terminal is first shown.
const XtermView = lazy(() => import('./XtermView').then((m) => ({ default: m.XtermView })));

/** Sessions whose CLI is gone cannot get a terminal (the API answers `session_not_live`). */
const ENDED = new Set(['closed', 'error']);

/**
 * A shell in the session's workspace. A terminal outlives this page (it ends with the session,
 * on Close, or after it idles with nobody attached), so the ones already running are offered
 * to attach to again rather than starting another each visit.
 */
export function TerminalPanel({ session }: { session: Session }) {
  const client = useQueryClient();
  const listKey = keys.sessionTerminals(session.id);
  const ended = ENDED.has(session.status);
  const running = useQuery({
    queryKey: listKey,
    queryFn: () => tools.sessionTerminals(session.id),
    enabled: !ended,
    // Terminals have no events on the stream: read the list whenever the page opens.
    staleTime: 0,
  });
  const [attached, setAttached] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const terminals = running.data ?? [];

  const act = async (action: () => Promise<void>) => {
    setBusy(true);
    try {
      await action();
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const open = () =>
    act(async () => {
      const started = await tools.startTerminal(session.id, 100, 24);
      client.setQueryData<TerminalView[]>(listKey, (list) => [...(list ?? []), started]);
      setAttached(started.id);
    });
  const close = (terminalId: string) =>
    act(async () => {
      try {
        await tools.endTerminal(terminalId);
      } finally {
        // Gone either way (a 404 means it had already ended).
        forget(terminalId);
      }
    });
  const forget = (terminalId: string) => {
    client.setQueryData<TerminalView[]>(listKey, (list) => list?.filter((t) => t.id !== terminalId));
    setAttached((id) => (id === terminalId ? null : id));
  };

  return (
    <Card
      title="Terminal"
      className="tools-card"
      actions={
        !ended && (
          <button className="button small" onClick={() => void open()} disabled={busy}>
            New terminal
          </button>
        )
      }
    >
      <div className="stack">
        {ended && <div className="note">This session has ended: a terminal needs its workspace's session to be running.</div>}
        <ErrorNote error={error} />
        <ErrorNote error={running.error?.message} what="list the terminals" />
        {terminals.length > 0 && (
          <div className="terminal-list" role="group" aria-label="Running terminals">
            {terminals.map((t, i) => (
              <span key={t.id} className="inline-form">
                <button
                  className={`button small ${attached === t.id ? 'primary' : 'ghost'}`}
                  onClick={() => setAttached(t.id)}
                  title={`${t.shell} in ${t.folder}`}
                >
                  Terminal {i + 1}
                </button>
                <button className="button small danger-ghost" onClick={() => void close(t.id)} aria-label={`Close terminal ${i + 1}`}>
                  Close
                </button>
              </span>
            ))}
          </div>
        )}
        {!ended && terminals.length === 0 && !running.isPending && (
          <p className="muted small">No terminal is open. A new one starts a shell in {session.worktree_path ?? 'the project folder'}.</p>
        )}
        {attached && (
          <Suspense fallback={<div className="loading">Loading the terminal…</div>}>
          <XtermView
            key={attached}
            terminalId={attached}
            // It stays on screen with its last output; only the list forgets it.
            onExit={() => client.setQueryData<TerminalView[]>(listKey, (list) => list?.filter((t) => t.id !== attached))}
          />
          </Suspense>
        )}
      </div>
    </Card>
  );
}
