// A Server-Sent Events parser for `fetch` bodies. The dashboard reads `/api/events/stream`
// with fetch rather than EventSource: event names are open-ended (one per CLI line type, which
// EventSource only delivers to listeners registered by name), and reconnecting with our own
// backoff and `?since=` needs control EventSource does not give.

export interface SseMessage {
  event: string;
  id?: string;
  data: string;
}

/** Feeds text in arbitrary chunks; calls `emit` once per complete message (comments skipped). */
export class SseParser {
  private buffer = '';
  private event = '';
  private id: string | undefined;
  private data: string[] = [];

  constructor(private readonly emit: (message: SseMessage) => void) {}

  push(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.search(/\r\n|\n|\r/)) >= 0) {
      const line = this.buffer.slice(0, newline);
      const width = this.buffer.startsWith('\r\n', newline) ? 2 : 1;
      this.buffer = this.buffer.slice(newline + width);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0) {
        this.emit({ event: this.event || 'message', id: this.id, data: this.data.join('\n') });
      }
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id') this.id = value;
  }
}

/** The frame the service sends as `data` (see the README's "Live events"). */
export interface Frame {
  event: string;
  seq?: number;
  type?: string;
  session_id?: string | null;
  timestamp?: string;
  data?: unknown;
  dropped?: number;
}

/** Delay before reconnect attempt `n` (0-based): 0.5 s doubling to 15 s, with jitter. */
export function backoff(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(15_000, 500 * 2 ** attempt);
  return Math.round(base * (0.75 + random() * 0.5));
}
