// The live connection to `/api/events/stream` and the counters pages watch to know when to
// reload. Every event bumps a counter for its kind (and one per session), so a page re-reads
// exactly what changed, from the REST API, which stays the one source of truth.
import { create } from 'zustand';
import { authHeaders } from '../api/client';
import { backoff, SseParser, type Frame } from '../lib/sse';

export type Connection = 'connecting' | 'live' | 'reconnecting';

interface LiveState {
  connection: Connection;
  lastEventId: number | null;
  /** Bumped by session.* events (any session). */
  sessions: number;
  /** Bumped by permission.decision events. */
  decisions: number;
  /** Bumped by local changes to projects and rules (they have no events). */
  config: number;
  /** Per-session counters. */
  bySession: Record<string, number>;
  reconnects: number;
  bumpConfig: () => void;
}

export const useLive = create<LiveState>((set) => ({
  connection: 'connecting',
  lastEventId: null,
  sessions: 0,
  decisions: 0,
  config: 0,
  bySession: {},
  reconnects: 0,
  bumpConfig: () => set((s) => ({ config: s.config + 1 })),
}));

type FrameListener = (frame: Frame) => void;
const listeners = new Set<FrameListener>();

/**
 * Hears every frame of the global stream as it arrives (pages append and patch their cached
 * data from the frames' contents). Returns the function that stops listening.
 */
export function onFrame(listener: FrameListener): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

/** Applies one frame to the counters (exported for tests). */
export function applyFrame(frame: Frame, id: number | null): void {
  for (const listener of listeners) listener(frame);
  useLive.setState((s) => {
    const next: Partial<LiveState> = { lastEventId: id ?? s.lastEventId };
    // This client fell behind and the service dropped events for it: reload everything.
    if (frame.event === 'warning') {
      return { ...next, sessions: s.sessions + 1, decisions: s.decisions + 1, config: s.config + 1 };
    }
    // Partial tokens arrive many times a second and change nothing a page reloads.
    if (frame.type === 'stream.event') return next;
    if (frame.type === 'permission.decision') next.decisions = s.decisions + 1;
    else if (frame.type?.startsWith('session.')) next.sessions = s.sessions + 1;
    if (frame.session_id) {
      next.bySession = { ...s.bySession, [frame.session_id]: (s.bySession[frame.session_id] ?? 0) + 1 };
    }
    return next;
  });
}

/**
 * Keeps one stream open for the life of the page: reconnects with backoff and resumes after
 * the last event seen (`?since=`), so nothing is missed while the service restarts.
 * Returns a function that stops it.
 */
export function connectLive(url = '/api/events/stream'): () => void {
  let stopped = false;
  let controller: AbortController | null = null;
  let attempt = 0;

  const run = async () => {
    while (!stopped) {
      controller = new AbortController();
      const since = useLive.getState().lastEventId;
      try {
        const res = await fetch(since === null ? url : `${url}?since=${since}`, {
          signal: controller.signal,
          headers: { Accept: 'text/event-stream', ...authHeaders() },
        });
        if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
        attempt = 0;
        // Reconnected: whatever happened while away may not all be in the replay; reload all.
        useLive.setState((s) => ({
          connection: 'live',
          sessions: s.sessions + 1,
          decisions: s.decisions + 1,
          config: s.config + 1,
        }));
        const parser = new SseParser((m) => {
          const frame = safeFrame(m.data);
          if (frame) applyFrame(frame, m.id !== undefined && /^\d+$/.test(m.id) ? Number(m.id) : null);
        });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(value);
        }
      } catch {
        // Network error or abort: fall through to the retry below.
      }
      if (stopped) return;
      useLive.setState((s) => ({ connection: 'reconnecting', reconnects: s.reconnects + 1 }));
      await new Promise((r) => setTimeout(r, backoff(attempt++)));
    }
  };
  void run();
  return () => {
    stopped = true;
    controller?.abort();
  };
}

function safeFrame(text: string): Frame | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Frame) : null;
  } catch {
    return null;
  }
}
