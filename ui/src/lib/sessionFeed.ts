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

export interface Feed {
  /** Stored lines, oldest first (ascending ids). */
  rows: Message[];
  /** More stored lines exist before `rows[0]`. */
  hasOlder: boolean;
  /** Lines heard since, in arrival order, none of them among `rows`. */
  live: LiveLine[];
  /** The first page has arrived (live lines may come before it). */
  loaded: boolean;
}

export const emptyFeed = (): Feed => ({ rows: [], hasOlder: false, live: [], loaded: false });

/** Every line in reading order. */
export function feedLines(feed: Feed): Line[] {
  return feed.live.length === 0 ? feed.rows : [...feed.rows, ...feed.live];
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

/** How far back a live line is looked for among stored rows (it can only repeat a recent one). */
const RECENT = 400;

function storedHas(rows: Message[], line: LiveLine, from = Math.max(0, rows.length - RECENT)): boolean {
  if (line.seq === null) return false;
  for (let i = rows.length - 1; i >= from; i--) {
    // The type must agree too: a mismatch of number spaces must not hide a real line.
    if (rows[i].seq === line.seq && rows[i].message_type === line.message_type) return true;
  }
  return false;
}

/** Adds lines heard live, skipping any already held (stored or heard). */
export function appendLive(feed: Feed, lines: LiveLine[]): Feed {
  const fresh = lines.filter(
    (l) => !storedHas(feed.rows, l) && !(l.seq !== null && feed.live.some((h) => h.seq === l.seq && h.message_type === l.message_type)),
  );
  return fresh.length === 0 ? feed : { ...feed, live: [...feed.live, ...fresh] };
}

/**
 * Merges a fresh read of the last `limit` stored lines (first load, reconnect, missed events).
 * Older pages already loaded stay when the two overlap; with a gap between them (more than a
 * page written while away) the old ones are dropped and read again on scrolling up. Live lines
 * now stored go; those not stored yet (writes lag behind the stream) stay.
 */
export function mergeTail(feed: Feed, tail: Message[], limit: number): Feed {
  let rows: Message[];
  let hasOlder: boolean;
  const complete = tail.length < limit;
  const newest = feed.rows[feed.rows.length - 1];
  if (complete || feed.rows.length === 0) {
    rows = tail;
    hasOlder = !complete;
  } else if (newest && tail[0].id <= newest.id) {
    // Ids grow across all sessions, so only an overlap proves nothing is missing in between.
    rows = [...feed.rows.filter((r) => r.id < tail[0].id), ...tail];
    hasOlder = feed.hasOlder;
  } else {
    rows = tail;
    hasOlder = true;
  }
  const tailStart = rows.length - tail.length;
  const canon = tailCanon(feed.live, rows, tailStart);
  const live = feed.live.filter((l) => !l.ephemeral && !storedHas(rows, l, tailStart) && !canon?.has(canonical(l.content)));
  return { rows, hasOlder, live, loaded: true };
}

/**
 * The tail's lines in one spelling (parsed and written again), to recognize a live line among
 * them even if its number was not the stored one. Computed only when live lines are left.
 */
function tailCanon(live: LiveLine[], rows: Message[], from: number): Set<string> | null {
  if (!live.some((l) => !l.ephemeral && l.seq !== null)) return null;
  const set = new Set<string>();
  for (let i = from; i < rows.length; i++) if (rows[i].direction === 'from_cli') set.add(canonical(rows[i].content));
  return set;
}

function canonical(content: string): string {
  try {
    return JSON.stringify(JSON.parse(content));
  } catch {
    return content;
  }
}

/** Puts a page of older lines (the `limit` before `rows[0]`) in front. */
export function prependOlder(feed: Feed, older: Message[], limit: number): Feed {
  const first = feed.rows[0];
  const fresh = first ? older.filter((r) => r.id < first.id) : older;
  return { ...feed, rows: [...fresh, ...feed.rows], hasOlder: older.length >= limit };
}

/** A decision heard live, in a list kept newest first (a repeat replaces its row in place). */
export function addDecision(list: Decision[] | undefined, decision: Decision): Decision[] {
  const held = list ?? [];
  return held.some((d) => d.id === decision.id)
    ? held.map((d) => (d.id === decision.id ? decision : d))
    : [decision, ...held];
}
