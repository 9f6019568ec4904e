// Everything the session page shows, kept fresh by the event stream rather than by reloading:
// the session row (every `session.*` frame carries it whole), the transcript (read from the
// end, older pages on demand, live lines appended from frames), decisions, the CLI's options,
// and the text being streamed. The REST API is read on first load, after a reconnect and after
// a `warning` about dropped events, nothing more.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { notifyManager, useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { api, type Decision, type Session } from '../api/client';
import { PAGE_SIZE, sessionApi } from '../api/sessions';
import { keys } from '../query/client';
import { onFrame, useLive } from '../store/live';
import { isLive } from './format';
import { PendingText } from './pendingText';
import {
  addDecision, appendLive, emptyFeed, firstStored, lineFromFrame, lineSeq, mergeTail, prependOlder, type Feed, type LiveLine,
} from './sessionFeed';
import type { Frame } from './sse';
import { turnWaitingOf } from './turnWaiting';
import { limitEventOf } from './usageLimits';

/** Agents whose turn's end is relayed as a raw line (Claude Code's `result`, Codex's `turn/completed`). */
const RAW_RESULTS = ['claude', 'codex'];
/** A line too big for its frame is read back from the store after the write-behind caught up. */
const STORED_AFTER_MS = 1000;

export function errorText(e: unknown): string | undefined {
  if (e === null || e === undefined) return undefined;
  return e instanceof Error ? e.message : String(e);
}

export function useSessionData(sessionId: string) {
  const qc = useQueryClient();
  const feedKey = keys.sessionMessages(sessionId);
  const decisionsKey = keys.decisions({ session_id: sessionId });

  // `always`: a page opened again may have missed frames while it was closed.
  const session = useQuery({
    queryKey: keys.session(sessionId),
    queryFn: () => api.session(sessionId),
    refetchOnMount: 'always',
  });
  const feed = useQuery({
    queryKey: feedKey,
    // Merged into what is held at the moment the answer arrives (lines heard meanwhile stay).
    queryFn: async () => {
      const tail = await sessionApi.tail(sessionId);
      return mergeTail(qc.getQueryData<Feed>(feedKey) ?? emptyFeed(), tail, PAGE_SIZE);
    },
    refetchOnMount: 'always',
    // The merge functions keep unchanged parts as they were; comparing thousands of lines per
    // live line would cost more than it saves.
    structuralSharing: false,
  });
  const decisions = useQuery({
    queryKey: decisionsKey,
    queryFn: () => api.decisions({ session_id: sessionId, limit: 1000 }),
    refetchOnMount: 'always',
  });
  const options = useQuery({
    queryKey: keys.sessionOptions(sessionId),
    queryFn: () => sessionApi.options(sessionId),
    refetchOnMount: 'always',
    retry: false,
  });

  const pending = useMemo(() => new PendingText(), [sessionId]);
  const refetchAll = useCallback(
    () => {
      // Not cancelling a read under way: it is as fresh as a new one would be.
      for (const queryKey of [keys.session(sessionId), keys.sessionMessages(sessionId), keys.decisions({ session_id: sessionId })]) {
        void qc.invalidateQueries({ queryKey }, { cancelRefetch: false });
      }
    },
    [qc, sessionId],
  );

  useEffect(() => {
    const router = new FrameRouter(qc, sessionId, pending, refetchAll);
    const stop = onFrame((frame) => router.hear(frame));
    return () => {
      stop();
      router.stop();
      pending.clear();
    };
  }, [qc, sessionId, pending, refetchAll]);

  // Back from a lost connection: read again (the live store invalidates every query too; this
  // does not start a second read of one already under way) and forget errors of before.
  const connection = useLive((s) => s.connection);
  const [epoch, setEpoch] = useState(0);
  const previous = useRef(connection);
  useEffect(() => {
    if (previous.current === 'reconnecting' && connection === 'live') {
      refetchAll();
      setEpoch((n) => n + 1);
    }
    previous.current = connection;
  }, [connection, refetchAll]);

  // The CLI tells its models and modes when it starts: ask again each time it comes (back) up.
  // (Unknown until the row is read: the first read of the options needs no second one.)
  const ready = session.data ? isLive(session.data.status) && session.data.status !== 'starting' : undefined;
  const wasReady = useRef(ready);
  useEffect(() => {
    if (ready && wasReady.current === false) void qc.invalidateQueries({ queryKey: keys.sessionOptions(sessionId) });
    wasReady.current = ready;
  }, [ready, qc, sessionId]);

  const older = { ...useOlderPages(qc, sessionId, epoch), hasOlder: feed.data?.hasOlder ?? false };
  return { session, feed, decisions, options, pending, older, epoch };
}

/** Reading older pages when the reader scrolls up: one at a time. */
function useOlderPages(qc: QueryClient, sessionId: string, epoch: number) {
  const [state, setState] = useState<{ loading: boolean; error?: string }>({ loading: false });
  const busy = useRef(false);
  useEffect(() => setState((s) => (s.error ? { loading: s.loading } : s)), [epoch]);
  const load = useCallback(async () => {
    const key = keys.sessionMessages(sessionId);
    const before = qc.getQueryData<Feed>(key);
    const first = before ? firstStored(before) : undefined;
    if (busy.current || !before?.hasOlder || !first) return;
    busy.current = true;
    setState({ loading: true });
    try {
      const page = await sessionApi.before(sessionId, first.id);
      // Unless a fresh read replaced the lines meanwhile (then this page no longer joins them).
      qc.setQueryData<Feed>(key, (now) => (now && firstStored(now)?.id === first.id ? prependOlder(now, page, PAGE_SIZE) : now));
      setState({ loading: false });
    } catch (e) {
      setState({ loading: false, error: errorText(e) });
    } finally {
      busy.current = false;
    }
  }, [qc, sessionId]);
  return { ...state, load };
}

/** Applies this session's frames to the cache and to the streamed text. */
class FrameRouter {
  /** ACP's text chunks: stored lines, but shown through the bubble until the message ends. */
  private quiet: LiveLine[] = [];
  private timers: ReturnType<typeof setTimeout>[] = [];

  constructor(
    private readonly qc: QueryClient,
    private readonly sessionId: string,
    private readonly pending: PendingText,
    private readonly refetchAll: () => void,
  ) {}

  hear(frame: Frame): void {
    // The service dropped events for this client: what is held may miss some.
    if (frame.event === 'warning') return this.refetchAll();
    // Their data names the session, whatever the frame says.
    const limit = limitEventOf(frame);
    if (limit) {
      if (limit.session_id !== this.sessionId) return;
      // Kept for the notice's count of queued turns; the wait's end makes it moot.
      this.qc.setQueryData(keys.limitEvent(this.sessionId), frame.type === 'usage.limit_reached' ? limit : null);
      return;
    }
    const waiting = turnWaitingOf(frame);
    if (waiting) {
      // Kept for the notice of its place in the project's line, until the turn starts.
      if (waiting.session_id === this.sessionId) this.qc.setQueryData(keys.turnWaiting(this.sessionId), waiting);
      return;
    }
    if (frame.session_id !== this.sessionId) return;
    const data = frame.data;
    switch (frame.type) {
      case 'session.created':
      case 'session.status':
      case 'session.closed':
      case 'session.error':
        if (isRow(data, this.sessionId)) {
          this.qc.setQueryData<Session>(keys.session(this.sessionId), data);
          // The session stays idle while its turn waits: any other status ends the wait.
          if (data.status !== 'idle') this.qc.setQueryData(keys.turnWaiting(this.sessionId), null);
        }
        return;
      case 'session.message':
      case 'session.result': {
        const line = lineFromFrame(frame);
        if (!line) return this.readBackLater();
        return this.append([line], endsText(line));
      }
      case 'stream.event':
        if (frame.event === 'session/update') {
          const line = lineFromFrame(frame);
          if (line) this.quiet.push(line);
        }
        return;
      case 'assistant.delta':
        return this.pending.append(textIn(data));
      case 'assistant.message':
      case 'turn.error':
        return this.append([], true);
      case 'turn.result': {
        const agent = this.qc.getQueryData<Session>(keys.session(this.sessionId))?.agent;
        // An ACP turn's end is the answer to its prompt, which is not relayed: say it from the event.
        const synthetic: LiveLine[] =
          agent && !RAW_RESULTS.includes(agent) && data && typeof data === 'object'
            ? [{
                key: `t${lineSeq(frame) ?? frame.timestamp}`, seq: null, direction: 'from_cli', message_type: 'turn.result',
                message_subtype: null, content: JSON.stringify(data), timestamp: frame.timestamp ?? '', ephemeral: true,
              }]
            : [];
        return this.append(synthetic, true);
      }
      case 'permission.decision':
        if (data && typeof data === 'object' && 'id' in data) {
          this.qc.setQueryData<Decision[]>(keys.decisions({ session_id: this.sessionId }), (list) => addDecision(list, data as Decision));
        }
        return;
    }
  }

  /**
   * Appends lines (and the quiet chunks before them); `endsText`: the bubble goes in the same
   * render that shows the lines, so the text never shows twice nor vanishes for a frame.
   */
  private append(lines: LiveLine[], endsText: boolean): void {
    // Chunks shown in the list are the bubble's text: it goes with them.
    const chunks = this.quiet.splice(0);
    const all = chunks.length > 0 ? [...chunks, ...lines] : lines;
    // What streamed until now; tokens of the next message, if any came already, stay.
    const upTo = this.pending.length();
    notifyManager.batch(() => {
      if (all.length > 0) this.qc.setQueryData<Feed>(keys.sessionMessages(this.sessionId), (f) => appendLive(f ?? emptyFeed(), all));
      if (endsText || chunks.length > 0) notifyManager.schedule(() => this.pending.clear(upTo));
    });
  }

  private readBackLater(): void {
    this.timers.push(
      setTimeout(
        () => void this.qc.invalidateQueries({ queryKey: keys.sessionMessages(this.sessionId) }, { cancelRefetch: false }),
        STORED_AFTER_MS,
      ),
    );
  }

  stop(): void {
    this.timers.forEach(clearTimeout);
  }
}

function isRow(data: unknown, sessionId: string): data is Session {
  return !!data && typeof data === 'object' && (data as { id?: unknown }).id === sessionId && 'status' in data;
}

function textIn(data: unknown): string {
  const text = data && typeof data === 'object' ? (data as { text?: unknown }).text : undefined;
  return typeof text === 'string' ? text : '';
}

/** Lines that carry the whole of what was being streamed, or end the turn. */
function endsText(line: LiveLine): boolean {
  switch (line.message_type) {
    case 'assistant':
    case 'result':
    case 'turn/completed':
      return true;
    case 'item/completed':
      return line.content.includes('"agentMessage"');
    default:
      return false;
  }
}
