// What deserves the user's attention while they look elsewhere: a turn finished, a tool call
// denied, a session failed or met a usage limit. Each such event counts in the tab's title while the tab is hidden
// (`(3) Conduit`), and becomes a browser notification when the user has turned them on (the
// permission is asked only then, never on load) and the page is not in front of them.
import type { Frame } from './sse';

export interface Alert {
  title: string;
  body: string;
  /** Notifications with the same tag replace each other (one per session and kind). */
  tag: string;
  /** Where clicking it leads. */
  path: string | null;
}

type Data = Record<string, unknown>;
const text = (v: unknown) => (typeof v === 'string' ? v : '');
const short = (s: string, n = 140) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The subject of a tool call (its command or path), from the audited input. */
function subject(toolInput: string): string {
  try {
    const v = JSON.parse(toolInput) as Data;
    for (const k of ['command', 'file_path', 'notebook_path', 'path', 'pattern', 'url']) if (typeof v[k] === 'string') return v[k];
  } catch {
    // Not JSON: the input as it is.
  }
  return toolInput;
}

/**
 * The alert for a frame, or null. Turns finish as `session.result` (Claude Code's result line);
 * other agents report only the normalized `turn.result`, used for them alone so that a
 * Claude Code turn does not alert twice.
 */
export function alertFor(frame: Frame, nameOf: (sessionId: string) => string | undefined): Alert | null {
  const data = (typeof frame.data === 'object' && frame.data !== null ? frame.data : {}) as Data;
  const sessionId = frame.session_id ?? (text(data.session_id) || null);
  const who = (sessionId && nameOf(sessionId)) || 'A session';
  const path = sessionId ? `/sessions/${sessionId}` : null;
  const tag = (kind: string) => `${kind}:${sessionId ?? 'none'}`;
  switch (frame.type) {
    case 'session.result':
    case 'turn.result': {
      if (frame.type === 'turn.result' && (data.agent === 'claude' || data.agent === undefined)) return null;
      const failed = data.is_error === true;
      const said = text(data.result) || text(data.text);
      return { title: `${who}: turn ${failed ? 'failed' : 'finished'}`, body: short(said), tag: tag('turn'), path };
    }
    case 'permission.decision': {
      if (data.decision !== 'deny') return null;
      const tool = text(data.tool_name) || 'A tool';
      return { title: `${who}: ${tool} denied`, body: short(subject(text(data.tool_input))), tag: tag('deny'), path };
    }
    case 'session.error':
      return { title: `${who} failed`, body: short(text(data.message) || text(data.error_message)), tag: tag('error'), path };
    case 'usage.limit_reached': {
      // Its turns wait: say when they go again, so nobody needs to open the page to know.
      const resumes = Date.parse(text(data.resumes_at));
      const when = Number.isNaN(resumes) ? '' : ` Resumes at ${new Date(resumes).toLocaleTimeString()}.`;
      return { title: `${who}: usage limit reached`, body: short(`${text(data.message)}${when}`.trim()), tag: tag('limit'), path };
    }
    default:
      return null;
  }
}

export interface NotifierDeps {
  doc: Document;
  /** The Notification API, when the browser has one. */
  api?: typeof Notification;
  storage?: Storage;
  nameOf: (sessionId: string) => string | undefined;
  open: (path: string) => void;
}

export const NOTIFY_KEY = 'conduit-notifications';

/** Counts alerts in the title while hidden, shows notifications when enabled. */
export class Notifier {
  unread = 0;
  private readonly baseTitle: string;

  constructor(private readonly deps: NotifierDeps) {
    this.baseTitle = deps.doc.title.replace(/^\(\d+\)\s*/, '') || 'Conduit';
  }

  /** Turned on by the user and allowed by the browser. */
  get enabled(): boolean {
    return this.permission === 'granted' && this.deps.storage?.getItem(NOTIFY_KEY) === 'on';
  }

  get permission(): NotificationPermission | 'unsupported' {
    return this.deps.api ? this.deps.api.permission : 'unsupported';
  }

  /** Asks the browser (only now, from the user's click) and remembers the choice. */
  async enable(): Promise<boolean> {
    const api = this.deps.api;
    if (!api) return false;
    const answer = api.permission === 'granted' ? 'granted' : await api.requestPermission();
    if (answer === 'granted') this.deps.storage?.setItem(NOTIFY_KEY, 'on');
    return answer === 'granted';
  }

  disable(): void {
    this.deps.storage?.setItem(NOTIFY_KEY, 'off');
  }

  handle(frame: Frame): void {
    const alert = alertFor(frame, this.deps.nameOf);
    if (!alert) return;
    const { doc } = this.deps;
    if (doc.hidden) {
      this.unread += 1;
      doc.title = `(${this.unread}) ${this.baseTitle}`;
    }
    const looking = !doc.hidden && doc.hasFocus();
    if (this.enabled && !looking && this.deps.api) {
      const shown = new this.deps.api(alert.title, { body: alert.body, tag: alert.tag });
      shown.onclick = () => {
        window.focus();
        if (alert.path) this.deps.open(alert.path);
        shown.close();
      };
    }
  }

  /** The tab is in front again: everything counted has been seen. */
  seen(): void {
    if (this.deps.doc.hidden) return;
    this.unread = 0;
    this.deps.doc.title = this.baseTitle;
  }
}
