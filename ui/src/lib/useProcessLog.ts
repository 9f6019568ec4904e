// One stream of a background process's log on screen: the stored bytes read by offset
// (`GET .../logs`), then, while the process runs, the rest followed live over SSE until `exit`.
// Only the tail is shown at first (a log may be megabytes); earlier bytes load on demand.
import { useCallback, useEffect, useRef, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { processLogStreamUrl, tools, type LogStream, type ProcessRow, type ProcessScope } from '../api/tools';
import { putProcess } from '../query/toolFrames';
import { byteLength, followLog } from './followLog';

/** Bytes read at once, and shown at first (the log's tail). */
export const LOG_PAGE = 256 * 1024;
/** Characters kept on screen while following; older ones are dropped (and can be loaded again). */
const MAX_SHOWN = 2 * 1024 * 1024;

export interface ProcessLogView {
  text: string;
  /** The byte offset the shown text starts at (above 0: earlier output can be loaded). */
  start: number;
  /** Following the live log right now. */
  live: boolean;
  /** The process ended and everything it wrote is shown (from `start`). */
  done: boolean;
  truncated: boolean;
  error?: string;
}

const EMPTY: ProcessLogView = { text: '', start: 0, live: false, done: false, truncated: false };

export function useProcessLog(scope: ProcessScope, ownerId: string, row: ProcessRow, stream: LogStream) {
  const client = useQueryClient();
  const [view, setView] = useState<ProcessLogView>(EMPTY);
  // The size the row knew when the log was opened (read once: the row changes as frames come,
  // which must not reopen the log).
  const knownBytes = useRef(0);
  knownBytes.current = stream === 'stderr' ? row.stderr_bytes : row.stdout_bytes;

  useEffect(() => {
    const abort = new AbortController();
    setView(EMPTY);
    const append = (data: string) =>
      setView((v) => {
        let text = v.text + data;
        let start = v.start;
        if (text.length > MAX_SHOWN) {
          const dropped = text.slice(0, text.length - MAX_SHOWN / 2);
          text = text.slice(dropped.length);
          start += byteLength(dropped);
        }
        return { ...v, text, start };
      });
    const run = async () => {
      const read = (offset: number) => tools.processLog(scope, ownerId, row.id, stream, offset, LOG_PAGE);
      // A long log is shown from its tail; the row's byte count may be behind (it is updated
      // when the process ends), so a log much longer than it said is read again from its tail.
      let page = await read(Math.max(0, knownBytes.current - LOG_PAGE));
      if (page.size - page.offset > 2 * LOG_PAGE) page = await read(page.size - LOG_PAGE);
      if (abort.signal.aborted) return;
      setView({ ...EMPTY, text: page.data, start: page.offset, truncated: page.truncated });
      let offset = page.next_offset;
      // Whatever was written while the tail was read.
      while (!page.complete && offset < page.size && !abort.signal.aborted) {
        page = await read(offset);
        append(page.data);
        offset = page.next_offset;
      }
      if (abort.signal.aborted) return;
      if (page.complete) {
        setView((v) => ({ ...v, done: true }));
        return;
      }
      setView((v) => ({ ...v, live: true }));
      await followLog(
        (from) => processLogStreamUrl(scope, ownerId, row.id, stream, from),
        offset,
        {
          onData: (data) => append(data),
          onExit: (ended) => {
            putProcess(client, ended);
            setView((v) => ({ ...v, live: false, done: true, truncated: truncatedOf(ended, stream) }));
          },
          onError: (message) => setView((v) => ({ ...v, live: false, error: message })),
        },
        abort.signal,
      );
    };
    run().catch((e: unknown) => {
      if (!abort.signal.aborted) setView((v) => ({ ...v, live: false, error: (e as Error).message }));
    });
    return () => abort.abort();
  }, [client, scope, ownerId, row.id, stream]);

  /** Loads the bytes before what is shown (a page at most). */
  const loadEarlier = useCallback(async () => {
    const end = view.start;
    if (end <= 0) return;
    const from = Math.max(0, end - LOG_PAGE);
    try {
      const page = await tools.processLog(scope, ownerId, row.id, stream, from, end - from);
      setView((v) => (v.start === end ? { ...v, text: page.data + v.text, start: from } : v));
    } catch (e) {
      setView((v) => ({ ...v, error: (e as Error).message }));
    }
  }, [scope, ownerId, row.id, stream, view.start]);

  return { view, loadEarlier };
}

function truncatedOf(row: ProcessRow, stream: LogStream): boolean {
  return stream === 'stderr' ? row.stderr_truncated : row.stdout_truncated;
}
