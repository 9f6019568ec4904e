import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { Session } from '../api/client';
import type { SessionDiff, TerminalView } from '../api/tools';
import { applyFrame } from '../store/live';
import { apiError, json, mockApi, renderPage } from '../test-utils/mockApi';
import { ReviewPage } from './ReviewPage';

// xterm.js needs a real layout and canvas; the page only needs what it calls.
const xterm = vi.hoisted(() => ({ written: [] as (string | Uint8Array)[], type: null as ((data: string) => void) | null }));
vi.mock('@xterm/xterm', () => ({
  Terminal: class {
    cols = 100;
    rows = 30;
    open() {}
    focus() {}
    loadAddon() {}
    dispose() {}
    write(data: string | Uint8Array) {
      xterm.written.push(data);
    }
    onData(listener: (data: string) => void) {
      xterm.type = listener;
      return { dispose() {} };
    }
    onBinary() {
      return { dispose() {} };
    }
    onResize() {
      return { dispose() {} };
    }
  },
}));
vi.mock('@xterm/addon-fit', () => ({ FitAddon: class { fit() {} activate() {} dispose() {} } }));

class FakeSocket {
  static OPEN = 1;
  static last: FakeSocket | null = null;
  readyState = 0;
  binaryType = 'blob';
  sent: (string | Uint8Array)[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: unknown }) => void) | null = null;
  onclose: ((e: { code: number; reason: string }) => void) | null = null;
  constructor(readonly url: string) {
    FakeSocket.last = this;
  }
  send(data: string | Uint8Array) {
    this.sent.push(data);
  }
  close() {
    this.readyState = 3;
  }
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
}

const session = (over: Partial<Session> = {}): Session => ({
  id: 's1', project_id: 'p1', name: 'brave otter', status: 'idle', transport: 'stdio', total_cost_usd: 0,
  total_input_tokens: 0, total_output_tokens: 0, num_turns: 1, created_at: '2025-01-01T00:00:00Z',
  last_active_at: '2025-01-01T00:00:00Z', workspace_mode: 'worktree', agent: 'claude',
  worktree_path: '/src/app/.conduit/brave-otter', branch: 'conduit/brave-otter', base_ref: 'main', ...over,
});

const diff: SessionDiff = {
  total_files: 2, offset: 0, limit: 100, truncated: false, branch: 'conduit/brave-otter', base_ref: 'main', base_commit: 'abcdef0123',
  files: [
    { path: 'src/lib.rs', status: 'modified', additions: 1, deletions: 1 },
    { path: 'logo.png', status: 'added', additions: null, deletions: null },
  ],
  patch: 'diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-fn old() {}\n+fn new() {}\n',
};
const terminal: TerminalView = {
  id: 't1', project_id: 'p1', session_id: 's1', folder: '/src/app/.conduit/brave-otter', shell: '/bin/bash', pid: 9,
  cols: 100, rows: 24, status: 'running', sandboxed: false, clients: 0, started_at: '2025-01-01T00:00:00Z',
};

function routes(over: Parameters<typeof mockApi>[0] = {}) {
  return mockApi({
    'GET /api/sessions/s1': () => session(),
    'GET /api/sessions/s1/diff': () => diff,
    'GET /api/terminals': () => [],
    ...over,
  });
}

describe('ReviewPage', () => {
  beforeEach(() => {
    xterm.written = [];
    FakeSocket.last = null;
    vi.stubGlobal('WebSocket', FakeSocket);
    sessionStorage.clear();
  });

  it('shows each changed file with its stats and its coloured patch', async () => {
    routes();
    renderPage(<ReviewPage />, '/sessions/s1/review', '/sessions/:sessionId/review');
    const files = await screen.findAllByTestId('diff-file');
    expect(screen.getByTestId('review-page')).toBeTruthy();
    expect(files).toHaveLength(2);
    expect(screen.getByTestId('diff-summary').textContent).toContain('2 files changed');
    expect(files[0].textContent).toContain('src/lib.rs');
    expect(files[0].querySelector('.line-add')?.textContent).toBe('+fn new() {}\n');
    expect(files[0].querySelector('.line-del .hljs-keyword')?.textContent).toBe('fn');
    expect(files[1].textContent).toContain('binary');
  });

  it('commits with a message and shows the answer; shows a merge conflict with its files', async () => {
    const seen = routes({
      'POST /api/sessions/s1/commit': () => json(201, { commit: '0123456789abcdef', branch: 'conduit/brave-otter' }),
      'POST /api/sessions/s1/merge': () =>
        apiError(409, 'merge_conflict', 'The merge would conflict; nothing was changed.', { files: ['src/lib.rs'] }),
    });
    renderPage(<ReviewPage />, '/sessions/s1/review', '/sessions/:sessionId/review');
    await screen.findAllByTestId('diff-file');
    fireEvent.change(screen.getByLabelText('Commit message'), { target: { value: 'Use the new function' } });
    fireEvent.submit(screen.getByRole('form', { name: 'Commit' }));
    expect((await screen.findByRole('status')).textContent).toBe('Committed 01234567 on conduit/brave-otter.');
    expect(seen.find((r) => r.method === 'POST')?.body).toEqual({ message: 'Use the new function' });
    // The diff is read again after the commit.
    await waitFor(() => expect(seen.filter((r) => r.url.pathname.endsWith('/diff'))).toHaveLength(2));

    fireEvent.click(screen.getByRole('button', { name: 'Merge into main' }));
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('Could not merge: The merge would conflict; nothing was changed.');
    expect(within(alert).getByRole('listitem').textContent).toBe('src/lib.rs');
    expect(seen.find((r) => r.url.pathname.endsWith('/merge'))?.body).toEqual({ strategy: 'merge_commit' });
  });

  it('explains a session without a worktree instead of offering buttons that fail', async () => {
    const seen = routes({ 'GET /api/sessions/s1': () => session({ workspace_mode: 'shared', worktree_path: null, branch: null }) });
    renderPage(<ReviewPage />, '/sessions/s1/review', '/sessions/:sessionId/review');
    expect((await screen.findByTestId('no-worktree')).textContent).toContain('no branch to review, commit or merge');
    expect(screen.queryByRole('form', { name: 'Commit' })).toBeNull();
    expect(screen.queryByText(/Merge into/)).toBeNull();
    expect(seen.some((r) => r.url.pathname.endsWith('/diff'))).toBe(false);
  });

  it('says when the agent worked since the diff was read', async () => {
    routes();
    renderPage(<ReviewPage />, '/sessions/s1/review', '/sessions/:sessionId/review');
    await screen.findAllByTestId('diff-file');
    await new Promise((r) => setTimeout(r, 5));
    act(() => applyFrame({ event: 'result', type: 'turn.result', session_id: 's1', data: {} }, 1));
    expect(await screen.findByText(/The agent has worked since this diff was read/)).toBeTruthy();
  });

  it('opens a terminal over its WebSocket: output, typing, resize, exit, close', async () => {
    sessionStorage.setItem('conduit-token', 's3cret');
    const seen = routes({
      'POST /api/sessions/s1/terminals': () => json(201, terminal),
      'DELETE /api/terminals/t1': () => json(204, null),
    });
    renderPage(<ReviewPage />, '/sessions/s1/review', '/sessions/:sessionId/review');
    fireEvent.click(await screen.findByRole('button', { name: 'New terminal' }));
    await screen.findByTestId('terminal');
    const ws = FakeSocket.last as FakeSocket;
    expect(ws.url).toBe('ws://localhost:3000/api/terminals/t1/ws?token=s3cret');
    expect(ws.binaryType).toBe('arraybuffer');
    act(() => ws.open());
    expect(ws.sent[0]).toBe('{"type":"resize","cols":100,"rows":30}');
    expect(screen.getByTestId('terminal-link').textContent).toBe('Connected');

    act(() => ws.onmessage?.({ data: new TextEncoder().encode('$ ').buffer }));
    expect(new TextDecoder().decode(xterm.written[0] as Uint8Array)).toBe('$ ');
    act(() => xterm.type?.('ls\r'));
    expect(new TextDecoder().decode(ws.sent[1] as Uint8Array)).toBe('ls\r');

    act(() => ws.onmessage?.({ data: '{"type":"error","message":"cols must be 1-1000"}' }));
    expect(screen.getByText('cols must be 1-1000')).toBeTruthy();
    act(() => ws.onmessage?.({ data: '{"type":"exit","code":0,"signal":null,"reason":"exited"}' }));
    expect(screen.getByTestId('terminal-link').textContent).toBe('The shell ended.');
    expect(String(xterm.written.at(-1))).toContain('the shell ended: exit 0');

    fireEvent.click(screen.getByRole('button', { name: 'New terminal' }));
    await waitFor(() => expect(screen.getByRole('button', { name: 'Close terminal 1' })).toBeTruthy());
    fireEvent.click(screen.getByRole('button', { name: 'Close terminal 1' }));
    await waitFor(() => expect(seen.some((r) => r.method === 'DELETE' && r.url.pathname === '/api/terminals/t1')).toBe(true));
    await waitFor(() => expect(screen.queryByTestId('terminal')).toBeNull());
  });
});
