// A session's transcript as the page holds it: the stored lines loaded so far (read from the end,
// a page at a time backwards) and the lines relayed live since, not yet among them. Pure
// functions, so the merging rules are tested without a network: a live line and its stored row
// are the same line when they have the same `seq`, so a reload plus live frames never doubles one.
import type { Decision, Message } from '../api/client';
import type { Frame } from './sse';

/** A line heard on the event stream (or written here), in the shape the transcript reads. */
export interface LiveLine {
  /** React key; never a bare number, so it cannot collide with a stored row's id. */
  key: string;
  /** The session stream's number for the line; null for lines made on this page. */
  seq: number | null;
  direction: string;
  message_type: string;
  message_subtype: string | null;
  content: string;
  timestamp: string;
  /**
   * Made on this page rather than relayed (the message just sent, a turn's end told only by a
   * normalized event): the next read of the stored lines replaces these.
   */
  ephemeral?: boolean;
}

export type Line = Message | LiveLine;

export const isStored = (line: Line): line is Message => !('key' in line);

export interface Feed {
  /**
   * Every line held, in reading order: stored rows (read from the end, a page at a time
   * backwards) and, after them or among them, lines heard live that were not read yet.
   */
  lines: Line[];
  /** More stored lines exist before the first stored one held. */
  hasOlder: boolean;
  /** The first page has arrived (live lines may come before it). */
  loaded: boolean;
}

export const emptyFeed = (): Feed => ({ lines: [], hasOlder: false, loaded: false });

/** The oldest stored line held: where the next older page ends. */
export function firstStored(feed: Feed): Message | undefined {
  return feed.lines.find(isStored);
}

/**
 * The number a frame's line has on its session's own stream, the one stored rows carry. A
 * `session_seq` member wins when the service sends one (the global stream numbers its frames
 * globally); otherwise the frame's `seq` is taken to be it, as the contract says.
 */
export function lineSeq(frame: Frame): number | null {
  const own = (frame as Frame & { session_seq?: unknown }).session_seq;
  if (typeof own === 'number') return own;
  return typeof frame.seq === 'number' ? frame.seq : null;
}

let unnumbered = 0;

/**
 * The line a `session.message`, `session.result` or `stream.event` frame relays, or null (no
 * data: a frame over the service's size cap carries `"data": null`, `"truncated": true`).
 */
export function lineFromFrame(frame: Frame): LiveLine | null {
  const data = frame.data;
  if (!data || typeof data !== 'object' || Array.isArray(data)) return null;
  const seq = lineSeq(frame);
  const [message_type, message_subtype] = kindOf(data as Record<string, unknown>, frame.event);
  return {
    key: seq === null ? `l-${++unnumbered}` : `l${seq}`,
    seq,
    direction: 'from_cli',
    message_type,
    message_subtype,
    content: JSON.stringify(data),
    timestamp: frame.timestamp ?? new Date().toISOString(),
  };
}

/** How the service stores a line's type: Claude Code's `type`/`subtype`, a notification's method. */
function kindOf(line: Record<string, unknown>, event: string): [string, string | null] {
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const type = str(line.type);
  if (type) return [type, str(line.subtype)];
  const method = str(line.method);
  if (method) {
    const update = (line.params as { update?: { sessionUpdate?: unknown } } | undefined)?.update;
    return [method, method === 'session/update' ? str(update?.sessionUpdate) : null];
  }
  return [event === 'system_init' ? 'system' : event, event === 'system_init' ? 'init' : null];
}

/** How far back a new live line is looked for (it can only repeat a recent one). */
const RECENT = 400;

/** The same relayed line: the same number, and the type too (numbers must not hide real lines). */
const sameNumber = (a: Line, seq: number | null, type: string) => seq !== null && a.seq === seq && a.message_type === type;

/** Adds lines heard live, skipping any already held (stored or heard). */
export function appendLive(feed: Feed, lines: LiveLine[]): Feed {
  const held = feed.lines;
  const from = Math.max(0, held.length - RECENT);
  const fresh = lines.filter((l, i) => {
    for (let j = held.length - 1; j >= from; j--) if (sameNumber(held[j], l.seq, l.message_type)) return false;
    return !lines.slice(0, i).some((earlier) => sameNumber(earlier, l.seq, l.message_type));
  });
  return fresh.length === 0 ? feed : { ...feed, lines: [...held, ...fresh] };
}

/**
 * Merges a fresh read of the last stored lines (`limit` asked for): on first load, after a
 * reconnect or missed events, and when a turn starts. The held lines that the read also holds
 * anchor it: the held lines before the first of them stay in front (older pages), the read
 * replaces the rest, and live lines not stored yet (writes lag behind the stream) stay after
 * it. With no anchor and a full read, more than a read's worth was written meanwhile: with
 * `onGap: 'reset'` the read replaces everything (older pages are read again on scrolling up);
 * with `'ignore'` the feed stays as it is.
 */
export function mergeTail(feed: Feed, tail: Message[], limit: number, onGap: 'reset' | 'ignore' = 'reset'): Feed {
  const held = feed.lines;
  const complete = tail.length < limit;
  const inTail = matcher(tail);
  const firstId = tail.length > 0 ? tail[0].id : Infinity;
  let first = -1;
  let last = -1;
  // From the newest back to the first stored line older than the read: nothing before it can be in it.
  for (let i = held.length - 1; i >= 0; i--) {
    const line = held[i];
    if (isStored(line) && line.id < firstId) break;
    if (inTail(line)) {
      if (last < 0) last = i;
      first = i;
    }
  }
  if (first < 0 && !complete && onGap === 'ignore' && feed.loaded) return feed;
  let front: Line[] = [];
  let after: Line[];
  if (first >= 0) {
    // A complete read is all there is: nothing stored lies before it.
    if (!complete) front = held.slice(0, first);
    after = held.slice(last + 1).filter((l) => !isStored(l) && !inTail(l));
  } else {
    const newest = tail.length > 0 ? Date.parse(tail[tail.length - 1].timestamp) : -Infinity;
    after = held.filter((l) => !isStored(l) && !inTail(l) && (complete || Date.parse(l.timestamp) >= newest));
  }
  const hasOlder = complete ? false : front.some(isStored) ? feed.hasOlder : true;
  return { lines: [...front, ...tail, ...after], hasOlder, loaded: true };
}

/** Whether a held line is one of `tail`'s: by id, by number, by content, a sent turn by its text. */
function matcher(tail: Message[]): (line: Line) => boolean {
  const ids = new Set<number>();
  const numbers = new Set<string>();
  let contents: Set<string> | null = null;
  const userTexts = new Set<string>();
  const answers: number[] = [];
  for (const row of tail) {
    ids.add(row.id);
    if (row.seq !== null && row.seq !== undefined) numbers.add(`${row.seq}:${row.message_type}`);
    if (row.direction === 'to_cli' && row.message_type === 'user') userTexts.add(userText(row.content));
    if (row.message_type === 'control_response' && row.content.includes('"stopReason"')) answers.push(Date.parse(row.timestamp));
  }
  return (line) => {
    if (isStored(line)) return ids.has(line.id);
    if (line.ephemeral) {
      if (line.direction === 'to_cli') return userTexts.has(userText(line.content));
      // A turn's end said from its event: the stored answer to the prompt is the same end.
      const at = Date.parse(line.timestamp);
      return answers.some((t) => Math.abs(t - at) < 5000);
    }
    if (line.seq !== null && numbers.has(`${line.seq}:${line.message_type}`)) return true;
    // The stream may number lines differently from the store: the same line has the same content.
    contents ??= new Set(tail.filter((r) => r.direction === 'from_cli').map((r) => canonical(r.content)));
    return contents.has(canonical(line.content));
  };
}

function userText(content: string): string {
  try {
    const message = (JSON.parse(content) as { message?: { content?: unknown } }).message;
    return typeof message?.content === 'string' ? message.content.trim() : content;
  } catch {
    return content;
  }
}

function canonical(content: string): string {
  try {
    return JSON.stringify(JSON.parse(content));
  } catch {
    return content;
  }
}

/** Puts a page of older lines (the `limit` before the first stored line held) in front. */
export function prependOlder(feed: Feed, older: Message[], limit: number): Feed {
  const first = firstStored(feed);
  const fresh = first ? older.filter((r) => r.id < first.id) : older;
  return { ...feed, lines: [...fresh, ...feed.lines], hasOlder: older.length >= limit };
}

/** A decision heard live, in a list kept newest first (a repeat replaces its row in place). */
export function addDecision(list: Decision[] | undefined, decision: Decision): Decision[] {
  const held = list ?? [];
  return held.some((d) => d.id === decision.id)
    ? held.map((d) => (d.id === decision.id ? decision : d))
    : [decision, ...held];
}
