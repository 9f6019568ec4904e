// The live connection to `/api/events/stream`. Its state (connecting, live, reconnecting) is
// kept here; the frames' contents go into the query cache (`cacheSync.ts`), so pages show what
// happened without asking the API again. Reconnects resume after the last event seen
// (`?since=`) and refetch everything once; a `warning` about dropped events does the same.
import { create } from 'zustand';
import { authHeaders, reportUnauthorized } from '../api/client';
import { backoff, SseParser, type Frame } from '../lib/sse';
import { readWithWatchdog, WATCHDOG_MS } from '../lib/streamReader';
import { queryClient } from '../query/client';
import { applyFrameToCache, refetchEverything, streamOpened } from './cacheSync';

export type Connection = 'connecting' | 'live' | 'reconnecting';

interface LiveState {
  connection: Connection;
  /** Where a reconnect resumes (`?since=`). */
  lastEventId: number | null;
  reconnects: number;
}

export const useLive = create<LiveState>(() => ({
  connection: 'connecting',
  lastEventId: null,
  reconnects: 0,
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

/** Token-by-token traffic: many frames a second, none of which changes a row. */
export function isPartial(frame: Frame): boolean {
  return frame.type === 'stream.event' || frame.type === 'assistant.delta';
}

/** Applies one frame: listeners, the query cache, where to resume (exported for tests). */
export function applyFrame(frame: Frame, id: number | null): void {
  for (const listener of listeners) listener(frame);
  applyFrameToCache(queryClient, frame);
  useLive.setState((s) => {
    const next: Partial<LiveState> = { lastEventId: id ?? s.lastEventId };
    // The service is stopping (its sessions close for that reason): the stream ends in a moment.
    if (!isPartial(frame) && frame.type === 'session.closed' && isShutdownClose(frame.data)) next.connection = 'reconnecting';
    return next;
  });
}

function isShutdownClose(data: unknown): boolean {
  return typeof data === 'object' && data !== null && (data as { closed_reason?: unknown }).closed_reason === 'shutdown';
}

export interface ConnectOptions {
  url?: string;
  /** Silence after which the connection counts as lost (tests shorten it). */
  watchdogMs?: number;
  fetcher?: typeof fetch;
}

/**
 * Keeps one stream open for the life of the page: reconnects with backoff and resumes after
 * the last event seen (`?since=`), so nothing is missed while the service restarts. The
 * indicator turns to "reconnecting" as soon as the stream ends, fails, or goes silent longer
 * than the keep-alive interval. Returns a function that stops it.
 */
export function connectLive(options: ConnectOptions = {}): () => void {
  const { url = '/api/events/stream', watchdogMs = WATCHDOG_MS, fetcher = (...a) => fetch(...a) } = options;
  let stopped = false;
  let controller: AbortController | null = null;
  let attempt = 0;
  let failures = 0;
  let wake: (() => void) | null = null;

  // The browser knows the network is gone before any read fails: give up the stream now, and
  // try again at once when it is back.
  const offline = () => controller?.abort();
  const online = () => wake?.();
  window.addEventListener('offline', offline);
  window.addEventListener('online', online);

  const run = async () => {
    while (!stopped) {
      controller = new AbortController();
      const since = useLive.getState().lastEventId;
      try {
        const res = await fetcher(since === null ? url : `${url}?since=${since}`, {
          signal: controller.signal,
          headers: { Accept: 'text/event-stream', ...authHeaders() },
        });
        if (res.status === 401) reportUnauthorized();
        if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
        attempt = 0;
        useLive.setState({ connection: 'live' });
        streamOpened();
        // Back after a failure: what happened meanwhile may not all be in the replay.
        if (failures > 0) refetchEverything(queryClient);
        const parser = new SseParser((m) => {
          const frame = safeFrame(m.data);
          if (frame) applyFrame(frame, m.id !== undefined && /^\d+$/.test(m.id) ? Number(m.id) : null);
        });
        await readWithWatchdog(res.body, (text) => parser.push(text), watchdogMs);
      } catch {
        // Ended, failed, went silent or aborted: retry below.
      }
      controller.abort();
      if (stopped) return;
      failures += 1;
      streamOpened();
      useLive.setState((s) => ({ connection: 'reconnecting', reconnects: s.reconnects + 1 }));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoff(attempt++));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  };
  void run();
  return () => {
    stopped = true;
    controller?.abort();
    wake?.();
    window.removeEventListener('offline', offline);
    window.removeEventListener('online', online);
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
