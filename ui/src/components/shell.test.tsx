import { Profiler } from 'react';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { QueryClientProvider } from '@tanstack/react-query';
import { MemoryRouter, Route, Routes } from 'react-router-dom';
import type { Decision, Project, Rule, Session } from '../api/client';
import { DashboardPage } from '../pages/DashboardPage';
import { ProjectPage } from '../pages/ProjectPage';
import { queryClient } from '../query/client';
import { resetJournal } from '../store/cacheSync';
import { applyFrame } from '../store/live';
import { Layout } from './Layout';

const RULE_ID = '0b6f5c3e-1d2a-4c8b-9e7f-123456789abc';
const projects: Project[] = [10, 2, 1, 11, 3].map(
  (n) =>
    ({
      id: `p${n}`, name: `many-${n}`, folder_path: `/code/many-${n}`, project_type: 'generic', source: 'created', max_sessions: 5,
      created_at: '', updated_at: '', workspace_mode: 'shared', workspace_copy: [], nodes: [], env: {},
    }) as Project,
);
const now = new Date().toISOString();
const session = (over: Partial<Session>): Session => ({
  id: 's1', project_id: 'p1', name: 'brave otter', status: 'closed', transport: 'stdio', total_cost_usd: 1,
  total_input_tokens: 10, total_output_tokens: 5, num_turns: 2, created_at: now, last_active_at: now,
  workspace_mode: 'shared', agent: 'claude', ...over,
});
const sessionsOf = (id: string) => [session({ id: `s-${id}`, project_id: id, name: `session of ${id}` })];
const rules: Rule[] = [
  { id: RULE_ID, tool_name: 'Bash', rule_content: 'rm:*', behavior: 'deny', priority: 0, project_id: null, created_at: '', updated_at: '' },
  { id: 'r-allow', tool_name: 'Read', rule_content: '', behavior: 'allow', priority: 0, project_id: null, created_at: '', updated_at: '' },
];
const denial: Decision = {
  id: 1, request_id: 'q', decision_point: 'hook', tool_name: 'Bash', tool_input: '{"command":"rm -rf x"}', decision: 'deny',
  decision_source: 'auto_rule', decided_at: now, rule_id: RULE_ID, session_id: 's-p1', reason: `denied by Conduit global rule ${RULE_ID} (Bash "rm:*")`,
};
const health = {
  status: 'healthy', uptime_seconds: 60, session_capacity_pct: 0, active_sessions: 0, max_sessions: 10, projects: 5,
  event_subscribers: 1, version: 'test', checks: { cli_available: true, database_ok: true, unstored_lines: 0 },
};

// The cost ledger: more than the sessions' totals ($5), since scheduled agents' runs are in it.
const todayUtc = new Date().toISOString().slice(0, 10);
let ledger = { earlier: 4, today: 8 };
function usage(query: URLSearchParams) {
  const figures = (cost_usd: number) => ({ cost_usd, input_tokens: 100, output_tokens: 20, turns: 1 });
  const total = figures(ledger.earlier + ledger.today);
  if (query.get('group_by') !== 'day') return { group_by: 'project', from: '', to: '', total, groups: [] };
  return { group_by: 'day', from: query.get('from'), to: '', total, groups: [{ key: todayUtc, ...figures(ledger.today) }] };
}

function answer(url: string): unknown {
  const { pathname: path, searchParams } = new URL(url, 'http://x');
  if (path === '/api/usage') return usage(searchParams);
  if (path === '/api/usage/limits') return [];
  if (path === '/api/projects') return projects;
  if (path === '/api/sessions/active') return [];
  if (path === '/api/health') return health;
  if (path === '/api/permissions/log') return [denial];
  if (path === '/api/rules/global') return rules;
  const sessions = path.match(/^\/api\/projects\/([^/]+)\/sessions$/);
  if (sessions) return sessionsOf(sessions[1]);
  const rulesOf = path.match(/^\/api\/projects\/([^/]+)\/rules$/);
  if (rulesOf) return [];
  const one = path.match(/^\/api\/projects\/([^/]+)$/);
  if (one) return projects.find((p) => p.id === one[1]);
  throw new Error(`unexpected request ${url}`);
}

const requests: string[] = [];
let renders = 0;

function renderShell(path = '/') {
  return render(
    <QueryClientProvider client={queryClient}>
      <MemoryRouter initialEntries={[path]}>
        <Profiler id="shell" onRender={() => (renders += 1)}>
          <Routes>
            <Route element={<Layout />}>
              <Route index element={<DashboardPage />} />
              <Route path="projects/:projectId" element={<ProjectPage />} />
            </Route>
          </Routes>
        </Profiler>
      </MemoryRouter>
    </QueryClientProvider>,
  );
}

beforeEach(() => {
  queryClient.clear();
  resetJournal();
  localStorage.clear();
  requests.length = 0;
  renders = 0;
  ledger = { earlier: 4, today: 8 };
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string) => {
      requests.push(url);
      return new Response(JSON.stringify(answer(url)), { status: 200, headers: { 'Content-Type': 'application/json' } });
    }),
  );
});
afterEach(() => vi.unstubAllGlobals());

const tile = (label: string) =>
  [...document.querySelectorAll('.tile')].find((t) => t.querySelector('.tile-label')?.textContent === label)?.querySelector('.tile-value')
    ?.textContent;

describe('the dashboard and its live data', () => {
  it('reads each list once, then follows events, reading only the costs again when a turn is stored', async () => {
    renderShell();
    await waitFor(() => expect(tile('Cost today')).toBe('$8.00'));
    await waitFor(() => expect(tile('Turns')).toBe('10'));
    // projects, live sessions, 5 project lists, health, decisions, global rules, usage all time and
    // by day, usage limits.
    expect(requests).toHaveLength(13);
    const thirteenDaysAgo = new Date(Date.now() - 13 * 86_400_000).toISOString().slice(0, 10);
    expect(requests.filter((u) => u.startsWith('/api/usage')).sort()).toEqual([
      '/api/usage',
      '/api/usage/limits',
      `/api/usage?group_by=day&from=${thirteenDaysAgo}`,
    ]);
    // Every account allowed (none reported): no card.
    expect(screen.queryByTestId('usage-limits')).toBeNull();
    // The ledger's figures, not the sum of the sessions' totals ($5).
    expect(screen.getByTestId('total-cost').textContent).toContain('$12.00');
    expect(screen.getByTestId('tile-cost').textContent).toContain('$12.00 all time');
    const bars = screen.getByTestId('cost-chart').querySelectorAll('g');
    expect(bars).toHaveLength(14);
    expect(bars[13].querySelector('title')?.textContent).toBe(`${todayUtc}: $8.00`);
    requests.length = 0;

    act(() => applyFrame({ event: 'session_created', type: 'session.created', session_id: 's9', data: session({ id: 's9', project_id: 'p2', status: 'starting', total_cost_usd: 0, total_input_tokens: 0, total_output_tokens: 0 }) }, 1));
    ledger.today += 0.5; // the turn's result is stored before its row is sent
    act(() => applyFrame({ event: 'session_status', type: 'session.status', session_id: 's9', data: session({ id: 's9', project_id: 'p2', status: 'idle', total_cost_usd: 0.5 }) }, 2));
    // The cache tells its observers on the next tick.
    await waitFor(() => expect(tile('Live sessions')).toBe('1'));
    expect(within(screen.getByTestId('live-sessions')).getByText('brave otter')).toBeTruthy();
    expect(within(screen.getByTestId('project-list')).getByRole('link', { name: /many-2/ }).textContent).toBe('many-21');
    // The costs are read again shortly after, once each.
    await waitFor(() => expect(tile('Cost today')).toBe('$8.50'), { timeout: 2_000 });
    await waitFor(() => expect(screen.getByTestId('total-cost').textContent).toContain('$12.50'));
    expect(requests.map((u) => u.split('?')[0])).toEqual(['/api/usage', '/api/usage']);
    requests.length = 0;

    const before = renders;
    await act(async () => {
      for (let i = 0; i < 50; i++) {
        applyFrame({ event: 'stream_event', type: 'stream.event', session_id: 's9', data: { type: 'stream_event' } }, 3 + i);
        applyFrame({ event: 'assistant_delta', type: 'assistant.delta', session_id: 's9', data: { text: 'x' } }, 100 + i);
      }
      await new Promise((r) => setTimeout(r, 600));
    });
    expect(renders).toBe(before);
    expect(requests).toEqual([]);

    ledger.today += 0.25;
    act(() => applyFrame({ event: 'session_closed', type: 'session.closed', session_id: 's9', data: session({ id: 's9', project_id: 'p2', status: 'closed', total_cost_usd: 0.75 }) }, 200));
    await waitFor(() => expect(tile('Live sessions')).toBe('0'));
    expect(renders).toBeGreaterThan(before);
    await waitFor(() => expect(tile('Cost today')).toBe('$8.75'), { timeout: 2_000 });
    expect(requests.map((u) => u.split('?')[0])).toEqual(['/api/usage', '/api/usage']);
  });

  it('shows global allow rules too, and names the rule of a denial by its text', async () => {
    renderShell();
    const rulesCard = await screen.findByTestId('global-rules');
    await waitFor(() => expect(within(rulesCard).getAllByRole('row')).toHaveLength(3));
    expect(within(rulesCard).getByText('Read')).toBeTruthy();
    const decisions = await screen.findByTestId('decisions');
    expect(decisions.textContent).toContain('denied by global rule Bash rm:*');
    expect(decisions.textContent).not.toContain(RULE_ID);
  });
});

describe('the sidebar', () => {
  it('lists projects in natural order and filters them', async () => {
    renderShell();
    const list = await screen.findByTestId('project-list');
    await waitFor(() => expect(within(list).getAllByRole('link')).toHaveLength(5));
    expect(within(list).getAllByRole('link').map((a) => a.textContent)).toEqual(['many-1', 'many-2', 'many-3', 'many-10', 'many-11']);
    fireEvent.change(screen.getByLabelText('Filter projects'), { target: { value: '1' } });
    expect(within(list).getAllByRole('link').map((a) => a.textContent)).toEqual(['many-1', 'many-10', 'many-11']);
    fireEvent.click(screen.getByRole('button', { name: /Projects/ }));
    expect(list.hidden).toBe(true);
  });
});

describe('the switcher', () => {
  it('opens on Ctrl+K, filters projects and sessions, moves with the arrows, opens with Enter', async () => {
    renderShell();
    // Every project's sessions are read (the switcher lists them).
    await waitFor(() => expect(tile('Turns')).toBe('10'));
    fireEvent.keyDown(window, { key: 'k', ctrlKey: true });
    const switcher = screen.getByTestId('switcher');
    const box = within(switcher).getByRole('combobox');
    fireEvent.change(box, { target: { value: 'many-1' } });
    const options = () => within(switcher).getAllByRole('option').map((o) => o.querySelector('.switcher-name')?.textContent);
    expect(options()).toEqual(['many-1', 'many-10', 'many-11']);
    fireEvent.keyDown(box, { key: 'ArrowDown' });
    fireEvent.keyDown(box, { key: 'ArrowDown' });
    expect(within(switcher).getByRole('option', { selected: true }).textContent).toContain('many-11');
    fireEvent.keyDown(box, { key: 'ArrowDown' });
    expect(within(switcher).getByRole('option', { selected: true }).textContent).toContain('many-1');
    fireEvent.keyDown(box, { key: 'ArrowUp' });
    fireEvent.keyDown(box, { key: 'Enter' });
    expect(screen.queryByTestId('switcher')).toBeNull();
    expect(await screen.findByRole('heading', { level: 1, name: 'many-11' })).toBeTruthy();
  });

  it('finds sessions by name, and closes with Escape (Cmd+K opens it too)', async () => {
    renderShell();
    // Every project's sessions are read (the switcher lists them).
    await waitFor(() => expect(tile('Turns')).toBe('10'));
    fireEvent.keyDown(window, { key: 'K', metaKey: true });
    const box = within(screen.getByTestId('switcher')).getByRole('combobox');
    fireEvent.change(box, { target: { value: 'session of p3' } });
    expect(within(screen.getByTestId('switcher')).getAllByRole('option')).toHaveLength(1);
    fireEvent.keyDown(box, { key: 'Escape' });
    expect(screen.queryByTestId('switcher')).toBeNull();
  });
});

describe('the theme toggle', () => {
  it('cycles system, light, dark on <html> and remembers it', async () => {
    renderShell();
    const toggle = screen.getByTestId('theme-toggle');
    expect(document.documentElement.dataset.theme).toBe('system');
    fireEvent.click(toggle);
    expect(document.documentElement.dataset.theme).toBe('light');
    fireEvent.click(toggle);
    expect(document.documentElement.dataset.theme).toBe('dark');
    expect(localStorage.getItem('conduit-theme')).toBe('dark');
    await waitFor(() => expect(requests.length).toBeGreaterThan(0));
  });
});
