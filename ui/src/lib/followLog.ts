// Follows a background process's log over SSE (`GET .../logs/stream`) until its `exit` event:
// `stdout`/`stderr` events carry `{offset, data}` and, as their `id`, the byte offset after
// them. Read with fetch (to send the token header, as the live store does); a connection that
// drops before `exit` is opened again from the last offset, so nothing is lost or repeated.
import { authHeaders } from '../api/client';
import type { ProcessRow } from '../api/tools';
import { backoff, SseParser } from './sse';

export interface LogFollower {
  /** Text that starts at byte `offset`; `next` is the offset after it. */
  onData: (data: string, offset: number, next: number) => void;
  /** The process ended: its final row. */
  onExit: (row: ProcessRow) => void;
  /** The stream could not be opened or read; the follower has stopped. */
  onError: (message: string) => void;
}

/** Resolves when the log ended (`exit`), failed, or `signal` aborted it. */
export async function followLog(
  urlFrom: (offset: number) => string,
  from: number,
  follower: LogFollower,
  signal: AbortSignal,
): Promise<void> {
  let offset = from;
  let ended = false;
  let attempt = 0;
  while (!ended && !signal.aborted) {
    let res: Response;
    try {
      res = await fetch(urlFrom(offset), { signal, headers: { Accept: 'text/event-stream', ...authHeaders() } });
    } catch {
      if (signal.aborted) return;
      await pause(backoff(attempt++), signal);
      continue;
    }
    if (!res.ok || !res.body) {
      follower.onError(await errorMessage(res));
      return;
    }
    attempt = 0;
    const parser = new SseParser((m) => {
      if (m.event === 'stdout' || m.event === 'stderr') {
        const chunk = parse<{ offset?: number; data?: string }>(m.data);
        if (!chunk || typeof chunk.data !== 'string') return;
        const at = typeof chunk.offset === 'number' ? chunk.offset : offset;
        const next = m.id !== undefined && /^\d+$/.test(m.id) ? Number(m.id) : at + byteLength(chunk.data);
        // A replay from an offset already shown (after a reconnect) adds nothing.
        if (next <= offset) return;
        offset = next;
        follower.onData(chunk.data, at, next);
      } else if (m.event === 'exit') {
        ended = true;
        const row = parse<ProcessRow>(m.data);
        if (row) follower.onExit(row);
      } else if (m.event === 'error') {
        ended = true;
        follower.onError(parse<{ message?: string }>(m.data)?.message ?? 'the log cannot be read');
      }
    });
    try {
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(value);
      }
    } catch {
      // Dropped or aborted: the loop decides.
    }
    if (!ended && !signal.aborted) await pause(backoff(attempt++), signal);
  }
}

export function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}

function parse<T>(text: string): T | null {
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

async function errorMessage(res: Response): Promise<string> {
  const body = parse<{ error?: { message?: string } }>(await res.text().catch(() => ''));
  return body?.error?.message ?? `The log stream answered ${res.status}.`;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
