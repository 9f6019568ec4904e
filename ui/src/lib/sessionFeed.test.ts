import type { Decision, Message } from '../api/client';
import {
  addDecision, appendLive, emptyFeed, lineFromFrame, mergeTail, prependOlder, type Feed, type LiveLine,
} from './sessionFeed';
import type { Frame } from './sse';

// Stored rows: ids grow across sessions (gaps), seq is the session stream's number.
const row = (id: number, seq: number | null, body: object = { type: 'assistant', n: id }): Message => ({
  id, seq, session_id: 's', direction: 'from_cli', message_type: (body as { type?: string }).type ?? 'assistant',
  message_subtype: null, content: JSON.stringify(body), timestamp: '2026-01-01T00:00:00Z',
});
const frame = (seq: number, data: object | null, over: Partial<Frame> = {}): Frame => ({
  event: 'assistant', seq, type: 'session.message', session_id: 's', timestamp: '2026-01-01T00:00:01Z', data, ...over,
});
const live = (seq: number, body: object = { type: 'assistant', n: seq }): LiveLine => lineFromFrame(frame(seq, body)) as LiveLine;
const ids = (f: Feed) => f.lines.map((l) => ('key' in l ? l.key : l.id));
const LIMIT = 3;

describe('lineFromFrame', () => {
  it('stores a frame\'s line the way the service stores it', () => {
    expect(lineFromFrame(frame(5, { type: 'system', subtype: 'init', model: 'm' }, { event: 'system_init' }))).toMatchObject({
      key: 'l5', seq: 5, message_type: 'system', message_subtype: 'init', direction: 'from_cli',
    });
    const acp = { method: 'session/update', params: { update: { sessionUpdate: 'agent_message_chunk' } } };
    expect(lineFromFrame(frame(6, acp, { type: 'stream.event', event: 'session/update' }))).toMatchObject({
      message_type: 'session/update', message_subtype: 'agent_message_chunk',
    });
  });

  it('prefers the session\'s own number when the frame carries one, and has no line without data', () => {
    const numbered = { ...frame(900, { type: 'result' }), session_seq: 7 } as Frame;
    expect(lineFromFrame(numbered)?.seq).toBe(7);
    expect(lineFromFrame(frame(8, null, { truncated: true } as Partial<Frame>))).toBeNull();
  });
});

describe('appendLive', () => {
  it('skips lines already stored or already heard (same seq), keeps the rest in order', () => {
    let f = mergeTail(emptyFeed(), [row(10, 1), row(14, 2)], LIMIT);
    f = appendLive(f, [live(2), live(3)]);
    f = appendLive(f, [live(3), live(4)]);
    expect(ids(f)).toEqual([10, 14, 'l3', 'l4']);
  });

  it('does not take a line of another type with the same number for the same line', () => {
    const f = appendLive(mergeTail(emptyFeed(), [row(10, 1)], LIMIT), [live(1, { type: 'result' })]);
    expect(ids(f)).toEqual([10, 'l1']);
  });

  it('holds lines heard before the first page, which then joins them without doubles', () => {
    let f = appendLive(emptyFeed(), [live(2), live(3)]);
    expect(f.loaded).toBe(false);
    f = mergeTail(f, [row(10, 1), row(11, 2)], LIMIT);
    expect(f.loaded).toBe(true);
    expect(ids(f)).toEqual([10, 11, 'l3']);
  });
});

describe('mergeTail', () => {
  it('takes a short tail as the whole history', () => {
    const f = mergeTail(emptyFeed(), [row(1, 1), row(2, 2)], LIMIT);
    expect([ids(f), f.hasOlder]).toEqual([[1, 2], false]);
  });

  it('keeps older pages when the fresh tail overlaps them, and drops live lines now stored', () => {
    let f = mergeTail(emptyFeed(), [row(20, 5), row(21, 6), row(22, 7)], LIMIT);
    f = prependOlder(f, [row(5, 2), row(6, 3), row(7, 4)], LIMIT);
    f = appendLive(f, [live(8), live(9), live(10)]);
    // Reconnected: 8 and 9 were stored meanwhile, 10 not yet (writes lag behind the stream).
    f = mergeTail(f, [row(22, 7), row(30, 8), row(31, 9)], LIMIT);
    expect(ids(f)).toEqual([5, 6, 7, 20, 21, 22, 30, 31, 'l10']);
    expect(f.hasOlder).toBe(true);
  });

  it('starts again from the tail when a gap lies between it and what is held', () => {
    let f = mergeTail(emptyFeed(), [row(1, 1), row(2, 2), row(3, 3)], LIMIT);
    f = mergeTail(f, [row(50, 60), row(51, 61), row(52, 62)], LIMIT);
    expect([ids(f), f.hasOlder]).toEqual([[50, 51, 52], true]);
  });

  it('recognizes a stored line by its content when the numbers disagree', () => {
    // A stream that numbers its frames globally: the live line's 900 is the stored row's 3.
    let f = appendLive(mergeTail(emptyFeed(), [row(1, 1)], LIMIT), [live(900, { type: 'assistant', text: 'hi' })]);
    f = mergeTail(f, [row(1, 1), row(2, 3, { type: 'assistant', text: 'hi' })], LIMIT);
    expect(ids(f)).toEqual([1, 2]);
  });
});

describe('mergeTail when a turn starts (a short read, to find lines the stream does not relay)', () => {
  const userRow = (id: number, text: string): Message => ({
    ...row(id, null), direction: 'to_cli', message_type: 'user', content: JSON.stringify({ type: 'user', message: { role: 'user', content: text } }),
  });

  it('puts the user\'s turn among the lines heard live, where it was written', () => {
    let f = mergeTail(emptyFeed(), [row(1, 1), row(2, 2), row(3, 3)], LIMIT);
    f = appendLive(f, [live(4), live(5)]);
    // Stored meanwhile: 4, 5, the user's turn (not relayed), and 6, heard a moment later.
    f = mergeTail(f, [row(20, 5), userRow(21, 'go on'), row(22, 6)], LIMIT, 'ignore');
    expect(ids(f)).toEqual([1, 2, 3, 'l4', 20, 21, 22]);
    f = appendLive(f, [live(6), live(7)]);
    expect(ids(f)).toEqual([1, 2, 3, 'l4', 20, 21, 22, 'l7']);
  });

  it('replaces the turn sent from this page by its stored line', () => {
    const sent: LiveLine = {
      key: 'u1', seq: null, direction: 'to_cli', message_type: 'user', message_subtype: null, timestamp: '', ephemeral: true,
      content: JSON.stringify({ type: 'user', message: { role: 'user', content: 'go on' } }),
    };
    let f = appendLive(mergeTail(emptyFeed(), [row(1, 1), row(2, 2), row(3, 3)], LIMIT), [sent]);
    f = mergeTail(f, [row(2, 2), row(3, 3), userRow(9, 'go on ')], LIMIT, 'ignore');
    expect(ids(f)).toEqual([1, 2, 3, 9]);
  });

  it('leaves the feed alone when the read does not join what is held', () => {
    const f = appendLive(mergeTail(emptyFeed(), [row(1, 1), row(2, 2), row(3, 3)], LIMIT), [live(4)]);
    expect(mergeTail(f, [row(50, 60), row(51, 61), row(52, 62)], LIMIT, 'ignore')).toBe(f);
  });
});

describe('prependOlder', () => {
  it('puts an older page in front and knows when it was the first', () => {
    let f = mergeTail(emptyFeed(), [row(7, 7), row(8, 8), row(9, 9)], LIMIT);
    f = prependOlder(f, [row(4, 4), row(5, 5), row(6, 6)], LIMIT);
    expect(f.hasOlder).toBe(true);
    f = prependOlder(f, [row(3, 3), row(4, 4)], LIMIT);
    expect([ids(f), f.hasOlder]).toEqual([[3, 4, 5, 6, 7, 8, 9], false]);
  });
});

describe('addDecision', () => {
  it('puts a new decision first and replaces a repeated one where it is', () => {
    const d = (id: number, decision: 'allow' | 'deny' = 'allow') =>
      ({ id, decision, tool_name: 'Bash', tool_input: '{}', request_id: 'r', decision_point: 'hook', decision_source: 'auto_default', decided_at: '' }) as Decision;
    const list = addDecision(addDecision([d(1)], d(2)), d(1, 'deny'));
    expect(list.map((x) => [x.id, x.decision])).toEqual([[2, 'allow'], [1, 'deny']]);
  });
});
