import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { Project, Session } from '../api/client';
import type { ProcessRow } from '../api/tools';
import { applyFrame } from '../store/live';
import { apiError, json, mockApi, renderPage } from '../test-utils/mockApi';
import { ProcessesPage } from './ProcessesPage';

const project: Project = {
  id: 'p1', name: 'app', folder_path: '/src/app', project_type: 'node', source: 'manual', max_sessions: 3,
  created_at: '2025-01-01T00:00:00Z', updated_at: '2025-01-01T00:00:00Z', workspace_mode: 'worktree', workspace_copy: [], nodes: [], env: {},
};
const session: Session = {
  id: 's1', project_id: 'p1', name: 'brave otter', status: 'idle', transport: 'stdio', total_cost_usd: 0,
  total_input_tokens: 0, total_output_tokens: 0, num_turns: 0, created_at: '2025-01-01T00:00:00Z',
  last_active_at: '2025-01-01T00:00:00Z', workspace_mode: 'worktree', agent: 'claude',
};
const proc = (over: Partial<ProcessRow>): ProcessRow => ({
  id: 'x', project_id: 'p1', session_id: null, kind: 'background', command: 'npm run dev', cwd: '/src/app',
  status: 'running', started_at: '2025-01-01T10:00:00Z', stdout_bytes: 0, stderr_bytes: 0,
  stdout_truncated: false, stderr_truncated: false, pid: 4242, ...over,
});

const dev = proc({ id: 'dev' });
const build = proc({ id: 'build', command: 'npm run build', status: 'exited', exit_code: 0, started_at: '2025-01-01T09:00:00Z' });

function routes(extra: Parameters<typeof mockApi>[0] = {}) {
  return mockApi({
    'GET /api/projects': () => [project],
    'GET /api/projects/p1/sessions': () => [session],
    'GET /api/sessions/s1': () => session,
    'GET /api/projects/p1/processes': () => [dev, build],
    ...extra,
  });
}

const rows = () => screen.queryAllByTestId('process-row');
const frame = (type: string, data: unknown) => ({ event: type.split('.')[1], type, session_id: null, data });

describe('ProcessesPage', () => {
  it('asks for a project first', async () => {
    routes();
    renderPage(<ProcessesPage />, '/processes');
    expect(screen.getByTestId('processes-page')).toBeTruthy();
    expect(screen.getByText('Choose a project.')).toBeTruthy();
    await screen.findByRole('option', { name: 'app' });
  });

  it("lists a project folder's processes and follows process.started and process.exited frames", async () => {
    const seen = routes();
    renderPage(<ProcessesPage />, '/processes?project=p1');
    await waitFor(() => expect(rows()).toHaveLength(2));
    expect(rows()[0].textContent).toContain('npm run dev');
    expect(rows()[1].textContent).toContain('exit 0');
    const reads = seen.length;
    act(() => applyFrame(frame('process.started', proc({ id: 'lint', command: 'npm run lint', started_at: '2025-01-01T11:00:00Z' })), 1));
    await waitFor(() => expect(rows()).toHaveLength(3));
    expect(rows()[0].textContent).toContain('npm run lint');
    act(() => applyFrame(frame('process.exited', { ...dev, status: 'killed', signal: 15, end_reason: 'requested' }), 2));
    await waitFor(() => expect(rows()[1].textContent).toContain('killed'));
    expect(rows()[1].textContent).toContain('signal 15, requested');
    // A session's process goes to that session's list, not this one.
    act(() => applyFrame(frame('process.started', proc({ id: 'other', session_id: 's1' })), 3));
    expect(rows()).toHaveLength(3);
    expect(seen.length).toBe(reads);
  });

  it("starts a process and shows the API's refusal", async () => {
    let refuse = true;
    const seen = routes({
      'POST /api/projects/p1/processes': (req) =>
        refuse
          ? apiError(403, 'permission_denied', 'Denied by rule 1 (Bash rm:*)')
          : json(202, proc({ id: 'new', command: (req.body as { command: string }).command, started_at: '2025-01-02T00:00:00Z' })),
    });
    renderPage(<ProcessesPage />, '/processes?project=p1');
    await waitFor(() => expect(rows()).toHaveLength(2));
    const form = screen.getByRole('form', { name: 'Start a process' });
    fireEvent.change(within(form).getByLabelText('Command'), { target: { value: 'rm -rf /' } });
    fireEvent.submit(form);
    expect((await within(form).findByRole('alert')).textContent).toContain('Denied by rule 1 (Bash rm:*)');
    refuse = false;
    fireEvent.change(within(form).getByLabelText('Command'), { target: { value: 'npm test' } });
    fireEvent.submit(form);
    await waitFor(() => expect(rows()).toHaveLength(3));
    expect(seen.filter((r) => r.method === 'POST').at(-1)?.body).toEqual({ command: 'npm test', cwd: null });
  });

  it('kills one, kills all, and cleans up the ended ones', async () => {
    const seen = routes({
      'POST /api/projects/p1/processes/dev/kill': () => json(202, dev),
      'POST /api/projects/p1/processes/kill-all': () => json(202, { count: 1 }),
      'POST /api/projects/p1/processes/cleanup': () => ({ count: 1 }),
    });
    renderPage(<ProcessesPage />, '/processes?project=p1');
    await waitFor(() => expect(rows()).toHaveLength(2));
    fireEvent.click(within(rows()[0]).getByRole('button', { name: 'Kill' }));
    expect(await screen.findByText('Ending npm run dev…')).toBeTruthy();
    expect(seen.find((r) => r.url.pathname.endsWith('/kill'))?.body).toEqual({});
    fireEvent.click(screen.getByRole('button', { name: 'Kill all' }));
    expect(await screen.findByText('Ending 1 process…')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Clean up ended' }));
    expect(await screen.findByText('Removed 1 ended process.')).toBeTruthy();
    expect(rows()).toHaveLength(1);
  });

  it('shows the stored log, then follows it live until exit', async () => {
    const ended = { ...dev, status: 'exited', exit_code: 0, stdout_bytes: 12 };
    const seen = routes({
      'GET /api/projects/p1/processes/dev/logs': () => ({
        stream: 'stdout', offset: 0, next_offset: 6, size: 6, data: 'hello\n', truncated: false, complete: false,
      }),
      'GET /api/projects/p1/processes/dev/logs/stream': () =>
        new Response(
          `event: stdout\nid: 12\ndata: {"offset":6,"data":"world\\n"}\n\nevent: exit\ndata: ${JSON.stringify(ended)}\n\n`,
          { headers: { 'Content-Type': 'text/event-stream' } },
        ),
    });
    renderPage(<ProcessesPage />, '/processes?project=p1');
    await waitFor(() => expect(rows()).toHaveLength(2));
    fireEvent.click(within(rows()[0]).getByRole('button', { name: 'Logs' }));
    await waitFor(() => expect(screen.getByTestId('log-text').textContent).toBe('hello\nworld\n'));
    await waitFor(() => expect(screen.getByTestId('log-state').textContent).toBe('ended'));
    expect(rows()[0].textContent).toContain('exited');
    const follow = seen.find((r) => r.url.pathname.endsWith('/logs/stream'));
    expect(follow?.url.search).toBe('?stream=stdout&offset=6');
  });

  it("lists a session's processes when opened with only the session", async () => {
    routes({ 'GET /api/sessions/s1/processes': () => [proc({ id: 'srv', session_id: 's1', command: 'cargo watch' })] });
    renderPage(<ProcessesPage />, '/processes?session=s1');
    await waitFor(() => expect(rows()).toHaveLength(1));
    expect(rows()[0].textContent).toContain('cargo watch');
    await waitFor(() => expect((screen.getByLabelText('Project') as HTMLSelectElement).value).toBe('p1'));
    expect((screen.getByLabelText('Folder or session') as HTMLSelectElement).value).toBe('s1');
  });
});
