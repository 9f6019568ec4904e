import { connectLive, useLive } from './live';

/** A fake `/api/events/stream`: each call answers with a stream the test writes into. */
function fakeService() {
  const streams: ReadableStreamDefaultController<Uint8Array>[] = [];
  const urls: string[] = [];
  const encoder = new TextEncoder();
  const fetcher = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    urls.push(String(input));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        streams.push(controller);
        init?.signal?.addEventListener('abort', () => controller.error(new DOMException('aborted', 'AbortError')));
      },
    });
    return { ok: true, status: 200, body } as Response;
  });
  return {
    fetcher: fetcher as unknown as typeof fetch,
    urls,
    send: (text: string) => streams[streams.length - 1].enqueue(encoder.encode(text)),
    end: () => streams[streams.length - 1].close(),
    get connections() {
      return streams.length;
    },
  };
}

const connection = () => useLive.getState().connection;

describe('the live indicator', () => {
  let stop: () => void = () => {};
  beforeEach(() => {
    vi.useFakeTimers();
    useLive.setState({ connection: 'connecting', lastEventId: null });
  });
  afterEach(() => {
    stop();
    vi.useRealTimers();
  });

  it('turns to reconnecting the moment the stream ends, then resumes after the last event', async () => {
    const service = fakeService();
    stop = connectLive({ fetcher: service.fetcher, watchdogMs: 20_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(connection()).toBe('live');
    service.send('event: session_status\nid: 41\ndata: {"event":"session_status","type":"session.status"}\n\n');
    await vi.advanceTimersByTimeAsync(0);
    expect(useLive.getState().lastEventId).toBe(41);
    service.end();
    await vi.advanceTimersByTimeAsync(0);
    expect(connection()).toBe('reconnecting');
    // The first retry comes after at most 625 ms (backoff with jitter), resuming after 41.
    await vi.advanceTimersByTimeAsync(700);
    expect(service.connections).toBe(2);
    expect(service.urls[1]).toBe('/api/events/stream?since=41');
    expect(connection()).toBe('live');
  });

  it('stays live through keep-alives, and turns to reconnecting when the stream goes silent', async () => {
    const service = fakeService();
    stop = connectLive({ fetcher: service.fetcher, watchdogMs: 20_000 });
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 3; i++) {
      await vi.advanceTimersByTimeAsync(15_000);
      service.send(': keep-alive\n\n');
    }
    await vi.advanceTimersByTimeAsync(19_000);
    expect(connection()).toBe('live');
    // The service stopped answering without closing the connection: no keep-alive comes.
    // (The retry comes at least 375 ms later: look before it.)
    await vi.advanceTimersByTimeAsync(1_100);
    expect(connection()).toBe('reconnecting');
    expect(service.connections).toBe(1);
  });

  it('turns to reconnecting when the service says it is stopping (its sessions close for shutdown)', async () => {
    const service = fakeService();
    stop = connectLive({ fetcher: service.fetcher });
    await vi.advanceTimersByTimeAsync(0);
    service.send('event: session_closed\nid: 5\ndata: {"event":"session_closed","type":"session.closed","data":{"closed_reason":"shutdown"}}\n\n');
    await vi.advanceTimersByTimeAsync(0);
    expect(connection()).toBe('reconnecting');
  });

  it('gives up the stream at once when the browser goes offline', async () => {
    const service = fakeService();
    stop = connectLive({ fetcher: service.fetcher });
    await vi.advanceTimersByTimeAsync(0);
    expect(connection()).toBe('live');
    window.dispatchEvent(new Event('offline'));
    await vi.advanceTimersByTimeAsync(0);
    expect(connection()).toBe('reconnecting');
    window.dispatchEvent(new Event('online'));
    await vi.advanceTimersByTimeAsync(0);
    expect(service.connections).toBe(2);
  });
});
