import { useEffect, useRef, useState } from 'react';
import type { LogStream, ProcessRow, ProcessScope } from '../api/tools';
import { useProcessLog } from '../lib/useProcessLog';
import { bytes } from './ProcessTable';
import { ErrorNote } from './ui';

/** A background process's stdout or stderr: what is stored, then live until it exits. */
export function ProcessLog(props: { scope: ProcessScope; ownerId: string; row: ProcessRow; onClose: () => void }) {
  const [stream, setStream] = useState<LogStream>('stdout');
  const { view, loadEarlier } = useProcessLog(props.scope, props.ownerId, props.row, stream);
  const box = useRef<HTMLPreElement>(null);
  // Stay at the bottom while following, unless the reader scrolled up.
  const pinned = useRef(true);
  useEffect(() => {
    const el = box.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [view.text]);

  return (
    <div className="stack" data-testid="process-log">
      <div className="log-head">
        <div className="mono wrap-anywhere">{props.row.command}</div>
        <div className="inline-form">
          <select value={stream} onChange={(e) => setStream(e.target.value as LogStream)} aria-label="Stream">
            <option value="stdout">stdout ({bytes(props.row.stdout_bytes)})</option>
            <option value="stderr">stderr ({bytes(props.row.stderr_bytes)})</option>
          </select>
          <span className="muted small" data-testid="log-state">
            {view.live ? 'live' : view.done ? 'ended' : view.error ? 'stopped' : 'reading…'}
          </span>
          <button className="button small ghost" onClick={props.onClose}>
            Close
          </button>
        </div>
      </div>
      {view.start > 0 && (
        <button className="button small ghost" onClick={() => void loadEarlier()}>
          Show earlier output ({bytes(view.start)} before this)
        </button>
      )}
      <pre
        className="log-view"
        ref={box}
        data-testid="log-text"
        onScroll={(e) => {
          const el = e.currentTarget;
          pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {view.text || (view.done ? '(no output)' : '')}
      </pre>
      {view.truncated && <div className="muted small">The process wrote more than the log keeps: the rest was not stored.</div>}
      <ErrorNote error={view.error} what="read the log" />
    </div>
  );
}
