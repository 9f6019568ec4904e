import { backoff, SseParser, type SseMessage } from './sse';

describe('SseParser', () => {
  it('assembles messages split across chunks, with names, ids and multi-line data', () => {
    const got: SseMessage[] = [];
    const p = new SseParser((m) => got.push(m));
    p.push('event: assistant\nid: 4');
    p.push('2\ndata: {"a":1}\n\n: keep-alive\n\nda');
    p.push('ta: line one\r\ndata: line two\r\n\r\n');
    expect(got).toEqual([
      { event: 'assistant', id: '42', data: '{"a":1}' },
      // The last id carries over, as in the SSE spec; the name resets to "message".
      { event: 'message', id: '42', data: 'line one\nline two' },
    ]);
  });

  it('ignores comments and blocks without data', () => {
    const got: SseMessage[] = [];
    const p = new SseParser((m) => got.push(m));
    p.push(': keep-alive\n\nevent: warning\n\n');
    expect(got).toEqual([]);
  });
});

describe('backoff', () => {
  it('doubles from half a second up to fifteen, with jitter around it', () => {
    const mid = () => 0.5;
    expect([0, 1, 2, 3, 4, 5, 6, 10].map((n) => backoff(n, mid))).toEqual([500, 1000, 2000, 4000, 8000, 15000, 15000, 15000]);
    expect(backoff(0, () => 0)).toBe(375);
    expect(backoff(0, () => 0.999)).toBeLessThanOrEqual(625);
  });
});
