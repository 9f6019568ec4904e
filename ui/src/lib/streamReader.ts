// Reads a streaming body as text, with a watchdog: a connection that has gone quiet for longer
// than the service's keep-alive interval is dead even if no error ever reaches the browser
// (a peer that vanished without closing, a sleeping laptop, a proxy holding the socket).

/** The service sends `: keep-alive` every 15 s on an idle stream (`KEEP_ALIVE` in src/http/streams.rs). */
export const KEEP_ALIVE_MS = 15_000;
/** Silence this long means the stream is gone: one keep-alive late, plus slack for a busy machine. */
export const WATCHDOG_MS = KEEP_ALIVE_MS + 5_000;

export class StreamStalled extends Error {
  constructor(ms: number) {
    super(`no data for ${ms} ms`);
  }
}

export class StreamEnded extends Error {
  constructor() {
    super('the stream ended');
  }
}

/**
 * Calls `onText` with each decoded chunk until the body ends (rejects with `StreamEnded`),
 * fails, or stays silent `idleMs` (rejects with `StreamStalled`, after cancelling the body).
 */
export async function readWithWatchdog(
  body: ReadableStream<Uint8Array>,
  onText: (text: string) => void,
  idleMs: number = WATCHDOG_MS,
): Promise<never> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const silence = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StreamStalled(idleMs)), idleMs);
    });
    try {
      const { value, done } = await Promise.race([reader.read(), silence]);
      if (done) throw new StreamEnded();
      const text = decoder.decode(value, { stream: true });
      if (text) onText(text);
    } catch (e) {
      reader.cancel().catch(() => {});
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }
}
