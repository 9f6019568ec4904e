// The shell's side of `lib/notify.ts`: one notifier for the page, fed by the live stream, and
// the control that turns browser notifications on (the only place permission is asked).
import { useEffect, useRef, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import type { Session } from '../api/client';
import { Notifier } from '../lib/notify';
import { keys, queryClient } from '../query/client';
import { onFrame } from '../store/live';

/** A session's name from whatever the cache holds (no request for a notification). */
function sessionName(id: string): string | undefined {
  const one = queryClient.getQueryData<Session>(keys.session(id));
  if (one) return one.name;
  for (const [, list] of queryClient.getQueriesData<Session[]>({
    predicate: (q) => q.queryKey[0] === 'sessions' || (q.queryKey[0] === 'projects' && q.queryKey[2] === 'sessions'),
  })) {
    const found = Array.isArray(list) ? list.find((s) => s.id === id) : undefined;
    if (found) return found.name;
  }
  return undefined;
}

function storage(): Storage | undefined {
  try {
    return localStorage;
  } catch {
    return undefined;
  }
}

/** Creates the page's notifier and keeps it listening while the shell is mounted. */
export function useNotifier(): Notifier {
  const navigate = useNavigate();
  const go = useRef(navigate);
  go.current = navigate;
  const [notifier] = useState(
    () =>
      new Notifier({
        doc: document,
        api: typeof Notification === 'undefined' ? undefined : Notification,
        storage: storage(),
        nameOf: sessionName,
        open: (path) => go.current(path),
      }),
  );
  useEffect(() => {
    const off = onFrame((frame) => notifier.handle(frame));
    const seen = () => notifier.seen();
    document.addEventListener('visibilitychange', seen);
    return () => {
      off();
      document.removeEventListener('visibilitychange', seen);
    };
  }, [notifier]);
  return notifier;
}

export function NotificationsToggle({ notifier }: { notifier: Notifier }) {
  const [, redraw] = useState(0);
  if (notifier.permission === 'unsupported') return null;
  if (notifier.permission === 'denied') {
    return (
      <span className="topbar-note" title="The browser blocks notifications for this site; allow them in its site settings.">
        Notifications blocked
      </span>
    );
  }
  const on = notifier.enabled;
  const label = on ? 'Notifications on' : 'Enable notifications';
  const toggle = async () => {
    if (on) notifier.disable();
    else await notifier.enable();
    redraw((n) => n + 1);
  };
  return (
    <button
      className="button small ghost"
      onClick={toggle}
      aria-pressed={on}
      aria-label={label}
      title={on ? 'Click to turn browser notifications off' : 'Notify me when a turn finishes, a tool call is denied, or a session fails or meets a usage limit'}
      data-testid="notifications-toggle"
    >
      {/* On a phone only the bell shows. */}
      <svg className="notify-icon" aria-hidden="true" width="16" height="16" viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="2">
        <path d="M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9" />
        <path d="M10.3 21a1.94 1.94 0 0 0 3.4 0" />
        {!on && <path d="M3 3l18 18" />}
      </svg>
      <span className="notify-label">{label}</span>
    </button>
  );
}
