// One terminal on screen: xterm.js attached to `GET /api/terminals/{id}/ws`. The protocol
// (src/http/terminals.rs): binary frames are raw bytes both ways (keyboard in, shell output
// out); text frames are JSON control messages: ours `{"type":"resize","cols","rows"}`, the
// server's `{"type":"error","message"}` (the connection stays) and
// `{"type":"exit","code","signal","reason"}` right before it closes. On connect the server
// sends the scrollback first, so a new connection repaints the screen.
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import { useEffect, useRef, useState } from 'react';
import { terminalSocketUrl } from '../api/tools';

export type Link = 'connecting' | 'open' | 'exited' | 'closed';

/** The server closed us for falling behind its output: reconnecting repaints from the scrollback. */
const CLOSE_TRY_AGAIN = 1013;

interface ServerControl {
  type?: string;
  message?: string;
  code?: number | null;
  signal?: number | null;
  reason?: string;
}

export function XtermView(props: { terminalId: string; onExit: () => void }) {
  const box = useRef<HTMLDivElement>(null);
  const [link, setLink] = useState<Link>('connecting');
  const [note, setNote] = useState<string>();
  // Bumped to connect again (a new terminal widget, repainted from the scrollback).
  const [attempt, setAttempt] = useState(0);
  const onExit = useRef(props.onExit);
  onExit.current = props.onExit;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    setLink('connecting');
    const term = new Terminal({
      cursorBlink: true,
      fontSize: 13,
      fontFamily: "'JetBrains Mono', ui-monospace, SFMono-Regular, Menlo, monospace",
      theme: { background: '#14161f' },
      scrollback: 5000,
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(el);
    const refit = () => {
      try {
        fit.fit();
      } catch {
        // Not laid out yet (hidden, zero size): the next resize fits it.
      }
    };
    refit();

    const ws = new WebSocket(terminalSocketUrl(props.terminalId));
    ws.binaryType = 'arraybuffer';
    const encoder = new TextEncoder();
    const send = (data: string | Uint8Array) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(data);
    };
    const sendSize = () => send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
    let exited = false;

    ws.onopen = () => {
      setLink('open');
      setNote(undefined);
      sendSize();
      term.focus();
    };
    ws.onmessage = (e: MessageEvent) => {
      if (typeof e.data !== 'string') {
        term.write(new Uint8Array(e.data as ArrayBuffer));
        return;
      }
      const control = parseControl(e.data);
      if (control?.type === 'exit') {
        exited = true;
        term.write(`\r\n\x1b[2m[${exitText(control)}]\x1b[0m\r\n`);
        setLink('exited');
        onExit.current();
      } else if (control?.type === 'error') {
        setNote(control.message ?? 'The terminal refused a control message.');
      }
    };
    ws.onclose = (e: CloseEvent) => {
      if (exited) return;
      if (e.code === CLOSE_TRY_AGAIN) {
        setAttempt((n) => n + 1);
        return;
      }
      setLink('closed');
      setNote(e.reason ? `Disconnected: ${e.reason}` : 'Disconnected from the terminal.');
    };

    const typed = term.onData((data) => send(encoder.encode(data)));
    const binary = term.onBinary((data) => send(Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff)));
    const resized = term.onResize(sendSize);
    let observer: ResizeObserver | null = null;
    if (typeof ResizeObserver !== 'undefined') {
      observer = new ResizeObserver(refit);
      observer.observe(el);
    } else {
      window.addEventListener('resize', refit);
    }

    return () => {
      observer?.disconnect();
      window.removeEventListener('resize', refit);
      typed.dispose();
      binary.dispose();
      resized.dispose();
      ws.onclose = null;
      ws.onmessage = null;
      ws.close();
      term.dispose();
    };
  }, [props.terminalId, attempt]);

  return (
    <div className="stack">
      <div className="terminal-box" ref={box} data-testid="terminal" data-link={link} />
      <div className="inline-form">
        <span className="muted small" data-testid="terminal-link">
          {{ connecting: 'Connecting…', open: 'Connected', exited: 'The shell ended.', closed: 'Disconnected.' }[link]}
        </span>
        {link === 'closed' && (
          <button className="button small ghost" onClick={() => setAttempt((n) => n + 1)}>
            Reconnect
          </button>
        )}
      </div>
      {note && <div className="error-note">{note}</div>}
    </div>
  );
}

function parseControl(text: string): ServerControl | null {
  try {
    return JSON.parse(text) as ServerControl;
  } catch {
    return null;
  }
}

function exitText(c: ServerControl): string {
  if (c.signal) return `the shell ended: signal ${c.signal}${c.reason ? `, ${c.reason}` : ''}`;
  return `the shell ended: exit ${c.code ?? '?'}${c.reason && c.reason !== 'exited' ? `, ${c.reason}` : ''}`;
}
