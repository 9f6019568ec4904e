import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { QueryClientProvider } from '@tanstack/react-query';
import type { Project } from '../api/client';
import { CreateProjectDialog } from '../components/ProjectDialogs';
import { keys, queryClient } from '../query/client';
import { applyFrameToCache } from '../store/cacheSync';
import { FakeService, renderAt } from './pageTestKit';
import { ProjectPage } from './ProjectPage';

const project = (over: Partial<Project> = {}): Project => ({
  id: 'p1', name: 'shop', folder_path: '/srv/shop', project_type: 'node', source: 'manual', max_sessions: 5,
  created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z', workspace_mode: 'shared', workspace_copy: [], nodes: [], env: {},
  budget_daily_usd: 5, budget_monthly_usd: null, ...over,
});

const report = (cost: number) => ({
  group_by: 'project', from: '', to: '', groups: [], total: { cost_usd: cost, input_tokens: 0, output_tokens: 0, turns: 1 },
});
/** What the project spent in the UTC day and month windows the page asks for. */
let spent: { today: number; month: number };
// A fixed clock (only Date: timers stay real), in mid-month so the two windows differ.
const NOW = '2026-06-15T10:00:00Z';

let service: FakeService;
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date(NOW));
  queryClient.clear();
  spent = { today: 1.2, month: 12 };
  service = new FakeService()
    .on('GET', '/api/projects/p1', { body: project() })
    .on('GET', '/api/projects/p1/sessions', { body: [] })
    .on('GET', '/api/projects/p1/rules', { body: [] })
    .on('GET', '/api/usage', (req) => ({ body: report(req.query.get('from') === '2026-06-01' ? spent.month : spent.today) }));
  vi.stubGlobal('fetch', service.fetch);
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

const routes = { '/projects/:projectId': <ProjectPage />, '/sessions/:sessionId': <div>session page</div> };
const field = (root: HTMLElement, name: string) => root.querySelector(`[name="${name}"]`) as HTMLInputElement;

describe("a project's budget state", () => {
  it('says what was spent today and this month against each budget, from the UTC windows of the cost ledger', async () => {
    service.on('GET', '/api/projects/p1', { body: project({ budget_daily_usd: 5, budget_monthly_usd: 100 }) });
    renderAt('/projects/p1', routes);
    const line = await screen.findByTestId('budget-line');
    await waitFor(() => expect(line.textContent).toBe('Spent today $1.20 of $5.00, this month $12.00 of $100.00.'));
    expect(screen.queryByTestId('budget-warning')).toBeNull();
    const asked = service.callsTo('GET', '/api/usage').map((c) => Object.fromEntries(c.query));
    expect(asked).toEqual(
      expect.arrayContaining([
        { group_by: 'project', project_id: 'p1', from: '2026-06-15' },
        { group_by: 'project', project_id: 'p1', from: '2026-06-01' },
      ]),
    );
  });

  it('warns once a budget is spent, when a stored cost has the ledger read again', async () => {
    renderAt('/projects/p1', routes);
    const line = await screen.findByTestId('budget-line');
    await waitFor(() => expect(line.textContent).toBe('Spent today $1.20 of $5.00, this month $12.00 (no monthly budget).'));
    spent = { today: 5.2, month: 16 };
    await act(() => queryClient.invalidateQueries({ queryKey: keys.usageAll }));
    const warning = await screen.findByTestId('budget-warning');
    expect(warning.textContent).toBe(
      'Budget spent. The daily budget of $5.00 is spent ($5.20 today); it resets in 14h 0m. ' +
        'New sessions and messages are refused and live sessions are paused until then, or until it is raised in Settings.',
    );
    expect(line.querySelector('.budget-spent')?.textContent).toBe('Spent today $5.20 of $5.00');
  });

  it('says so when the project has no budget', async () => {
    service.on('GET', '/api/projects/p1', { body: project({ budget_daily_usd: null }) });
    renderAt('/projects/p1', routes);
    const line = await screen.findByTestId('budget-line');
    await waitFor(() => expect(line.textContent).toBe('No budget. Spent today $1.20, this month $12.00.'));
  });
});

describe("a project's settings", () => {
  it('shows its budgets, refuses a negative one with a clear message, and clears one with null', async () => {
    service.on('PUT', '/api/projects/p1', (req) => ({ body: project({ ...(req.body as Partial<Project>) }) }));
    renderAt('/projects/p1', routes);
    const form = await screen.findByTestId('project-settings');
    expect(field(form, 'budget_daily_usd').value).toBe('5');
    expect(field(form, 'budget_monthly_usd').value).toBe('');

    fireEvent.change(field(form, 'budget_monthly_usd'), { target: { value: '-20' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save settings' }));
    expect(await within(form).findByText('A budget cannot be negative: $0 or more, or empty for none.')).toBeTruthy();
    expect(field(form, 'budget_monthly_usd').getAttribute('aria-invalid')).toBe('true');
    expect(service.callsTo('PUT', '/api/projects/p1')).toHaveLength(0);

    fireEvent.change(field(form, 'budget_monthly_usd'), { target: { value: '$150' } });
    fireEvent.change(field(form, 'budget_daily_usd'), { target: { value: '' } });
    expect(within(form).queryByText(/cannot be negative/)).toBeNull();
    fireEvent.click(within(form).getByRole('button', { name: 'Save settings' }));
    expect(await within(form).findByText('Saved.')).toBeTruthy();
    const body = service.callsTo('PUT', '/api/projects/p1')[0].body as Record<string, unknown>;
    expect(body).toMatchObject({ name: 'shop', budget_daily_usd: null, budget_monthly_usd: 150 });
  });

  it('leaves unchanged budgets out of the update', async () => {
    service.on('PUT', '/api/projects/p1', (req) => ({ body: project({ ...(req.body as Partial<Project>) }) }));
    renderAt('/projects/p1', routes);
    const form = await screen.findByTestId('project-settings');
    fireEvent.click(within(form).getByRole('button', { name: 'Save settings' }));
    await within(form).findByText('Saved.');
    const body = service.callsTo('PUT', '/api/projects/p1')[0].body as Record<string, unknown>;
    expect(body).not.toHaveProperty('budget_daily_usd');
    expect(body).not.toHaveProperty('budget_monthly_usd');
  });
});

describe("a project's turns at once", () => {
  it('shows the stored limit, refuses 0 with a clear message, clears it with null and leaves it out when unchanged', async () => {
    service
      .on('GET', '/api/projects/p1', { body: project({ max_running_turns: 3 }) })
      .on('GET', '/api/projects/p1/turns', { body: { max_running_turns: 3, running: [], waiting: [] } })
      .on('PUT', '/api/projects/p1', (req) => ({ body: project({ max_running_turns: 3, ...(req.body as Partial<Project>) }) }));
    renderAt('/projects/p1', routes);
    const form = await screen.findByTestId('project-settings');
    expect(field(form, 'max_running_turns').value).toBe('3');

    fireEvent.click(within(form).getByRole('button', { name: 'Save settings' }));
    await within(form).findByText('Saved.');
    expect(service.callsTo('PUT', '/api/projects/p1')[0].body).not.toHaveProperty('max_running_turns');

    fireEvent.change(field(form, 'max_running_turns'), { target: { value: '0' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save settings' }));
    expect(await within(form).findByText('At least 1 turn at once, or leave it empty for no limit.')).toBeTruthy();
    expect(field(form, 'max_running_turns').getAttribute('aria-invalid')).toBe('true');
    expect(service.callsTo('PUT', '/api/projects/p1')).toHaveLength(1);

    fireEvent.change(field(form, 'max_running_turns'), { target: { value: '' } });
    expect(within(form).queryByText(/At least 1 turn/)).toBeNull();
    fireEvent.click(within(form).getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(service.callsTo('PUT', '/api/projects/p1')).toHaveLength(2));
    expect(service.callsTo('PUT', '/api/projects/p1')[1].body).toMatchObject({ max_running_turns: null });
  });

  it('is set on a new project, after a bad one is corrected', async () => {
    service.on('POST', '/api/projects', (req) => ({ status: 201, body: project({ id: 'p2', ...(req.body as Partial<Project>) }) }));
    const created = vi.fn();
    render(
      <QueryClientProvider client={queryClient}>
        <CreateProjectDialog onClose={() => {}} onCreated={created} />
      </QueryClientProvider>,
    );
    const dialog = screen.getByRole('dialog');
    fireEvent.change(within(dialog).getByLabelText('Name'), { target: { value: 'docs' } });
    fireEvent.change(within(dialog).getByLabelText(/^Folder/), { target: { value: 'code/docs' } });
    fireEvent.change(field(dialog, 'max_running_turns'), { target: { value: '2.5' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Create project' }));
    expect(await within(dialog).findByText('Enter a whole number of turns from 1 to 1000, or leave it empty for no limit.')).toBeTruthy();
    expect(service.callsTo('POST', '/api/projects')).toHaveLength(0);

    fireEvent.change(field(dialog, 'max_running_turns'), { target: { value: '2' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Create project' }));
    await waitFor(() => expect(created).toHaveBeenCalledWith('p2'));
    expect(service.callsTo('POST', '/api/projects')[0].body).toEqual({
      name: 'docs', folder_path: 'code/docs', description: null, max_running_turns: 2,
    });
  });
});

describe("a project's limit fields (ProjectLimitFields), in the new-project dialog and in its settings", () => {
  const limitFields = (root: HTMLElement) => ({
    daily: within(root).getByLabelText(/^Daily budget \(USD\)/) as HTMLInputElement,
    monthly: within(root).getByLabelText(/^Monthly budget \(USD\)/) as HTMLInputElement,
    turns: within(root).getByLabelText(/^Turns at once/) as HTMLInputElement,
  });
  const errorsIn = (root: HTMLElement) => [...root.querySelectorAll('.field-error')].map((e) => e.textContent);

  /** Bad values in all three: every problem at once and nothing sent; then good ones, submitted. */
  async function fillIn(root: HTMLElement, submit: string, sent: () => number) {
    const f = limitFields(root);
    fireEvent.change(f.daily, { target: { value: '-1' } });
    fireEvent.change(f.monthly, { target: { value: 'lots' } });
    fireEvent.change(f.turns, { target: { value: '0' } });
    fireEvent.click(within(root).getByRole('button', { name: submit }));
    await waitFor(() =>
      expect(errorsIn(root)).toEqual([
        'A budget cannot be negative: $0 or more, or empty for none.',
        'Enter an amount in USD, like 25 or 7.50, or leave it empty for no budget.',
        'At least 1 turn at once, or leave it empty for no limit.',
      ]),
    );
    expect([f.daily, f.monthly, f.turns].map((i) => i.getAttribute('aria-invalid'))).toEqual(['true', 'true', 'true']);
    expect(sent()).toBe(0);
    // Editing a field clears its own error only.
    fireEvent.change(f.turns, { target: { value: '4' } });
    expect(errorsIn(root)).toHaveLength(2);
    fireEvent.change(f.daily, { target: { value: '10' } });
    fireEvent.change(f.monthly, { target: { value: '$150' } });
    expect(errorsIn(root)).toEqual([]);
    fireEvent.click(within(root).getByRole('button', { name: submit }));
    await waitFor(() => expect(sent()).toBe(1));
  }
  const limitsOf = (body: unknown) => {
    const b = body as Record<string, unknown>;
    return { daily: b.budget_daily_usd, monthly: b.budget_monthly_usd, turns: b.max_running_turns };
  };

  it('have the same labels and checks in both places, and send the same values', async () => {
    service
      .on('POST', '/api/projects', (req) => ({ status: 201, body: project({ id: 'p2', ...(req.body as Partial<Project>) }) }))
      .on('PUT', '/api/projects/p1', (req) => ({ body: project({ ...(req.body as Partial<Project>) }) }));
    const created = vi.fn();
    const dialog = render(
      <QueryClientProvider client={queryClient}>
        <CreateProjectDialog onClose={() => {}} onCreated={created} />
      </QueryClientProvider>,
    );
    const form = screen.getByRole('dialog');
    // A new project starts with no limits.
    expect(Object.values(limitFields(form)).map((i) => i.value)).toEqual(['', '', '']);
    fireEvent.change(within(form).getByLabelText('Name'), { target: { value: 'docs' } });
    fireEvent.change(within(form).getByLabelText(/^Folder/), { target: { value: 'code/docs' } });
    await fillIn(form, 'Create project', () => service.callsTo('POST', '/api/projects').length);
    await waitFor(() => expect(created).toHaveBeenCalledWith('p2'));
    dialog.unmount();

    renderAt('/projects/p1', routes);
    const settings = await screen.findByTestId('project-settings');
    // The settings start from the stored limits (a daily budget of 5, no monthly one, no turn limit).
    expect(Object.values(limitFields(settings)).map((i) => i.value)).toEqual(['5', '', '']);
    await fillIn(settings, 'Save settings', () => service.callsTo('PUT', '/api/projects/p1').length);
    await within(settings).findByText('Saved.');

    const createdWith = limitsOf(service.callsTo('POST', '/api/projects')[0].body);
    expect(createdWith).toEqual({ daily: 10, monthly: 150, turns: 4 });
    expect(limitsOf(service.callsTo('PUT', '/api/projects/p1')[0].body)).toEqual(createdWith);
  });
});

describe("a project's line of turns", () => {
  const slot = (session_id: string, position: number) => ({ session_id, position, since: '2026-06-15T09:59:00Z' });
  const sessionRow = (id: string, name: string, status = 'idle') => ({
    id, project_id: 'p1', name, status, transport: 'stdio', agent: 'claude', total_cost_usd: 0, total_input_tokens: 0,
    total_output_tokens: 0, num_turns: 0, created_at: '', last_active_at: '', workspace_mode: 'shared',
  });

  it('is not shown, nor read, while the project has no limit', async () => {
    renderAt('/projects/p1', routes);
    await screen.findByTestId('project-settings');
    expect(screen.queryByTestId('turn-queue')).toBeNull();
    expect(service.callsTo('GET', '/api/projects/p1/turns')).toHaveLength(0);
  });

  it('says how many run of the limit and how many wait, names the waiting in order, and is read again on status frames', async () => {
    let queue = { max_running_turns: 1, running: [slot('s1', 1)], waiting: [slot('s3', 2), slot('s2', 1)] };
    service
      .on('GET', '/api/projects/p1', { body: project({ max_running_turns: 1 }) })
      .on('GET', '/api/projects/p1/sessions', { body: [sessionRow('s1', 'brave otter', 'active'), sessionRow('s2', 'calm heron'), sessionRow('s3', 'quick lynx')] })
      .on('GET', '/api/projects/p1/turns', () => ({ body: queue }));
    renderAt('/projects/p1', routes);
    const card = await screen.findByTestId('turn-queue');
    await waitFor(() => expect(within(card).getByRole('heading').textContent).toBe('Turns: 1 running of 1, 2 waiting'));
    expect(within(card).getAllByTestId('turn-waiting').map((li) => li.textContent)).toEqual(['#1 calm heron', '#2 quick lynx']);

    // s1's turn ended, s2's started: the line is read again after the status frames.
    queue = { max_running_turns: 1, running: [slot('s2', 1)], waiting: [slot('s3', 1)] };
    act(() => {
      applyFrameToCache(queryClient, { event: 'session_status', type: 'session.status', session_id: 's1', data: sessionRow('s1', 'brave otter') });
      applyFrameToCache(queryClient, { event: 'session_status', type: 'session.status', session_id: 's2', data: sessionRow('s2', 'calm heron', 'active') });
    });
    await waitFor(() => expect(within(card).getAllByTestId('turn-waiting').map((li) => li.textContent)).toEqual(['#1 quick lynx']));
    expect(within(card).getByRole('heading').textContent).toBe('Turns: 1 running of 1, 1 waiting');
    expect(service.callsTo('GET', '/api/projects/p1/turns')).toHaveLength(2);
  });
});

describe('a new session', () => {
  const launched = { id: 's1', project_id: 'p1', name: 'brave otter', status: 'starting', transport: 'stdio', agent: 'claude',
    total_cost_usd: 0, total_input_tokens: 0, total_output_tokens: 0, num_turns: 0, created_at: '', last_active_at: '',
    workspace_mode: 'shared', max_budget_usd: 2.5 };

  it('takes an optional cost cap above $0 and sends it as max_budget_usd', async () => {
    service.on('POST', '/api/projects/p1/sessions', { status: 201, body: launched });
    renderAt('/projects/p1', routes);
    fireEvent.click(await screen.findByRole('button', { name: 'New session' }));
    const dialog = screen.getByRole('dialog');
    fireEvent.change(field(dialog, 'max_budget_usd'), { target: { value: '0' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Start session' }));
    expect(await within(dialog).findByText('A cap must be more than $0, or empty for none.')).toBeTruthy();
    expect(service.callsTo('POST', '/api/projects/p1/sessions')).toHaveLength(0);

    fireEvent.change(field(dialog, 'max_budget_usd'), { target: { value: '2.50' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Start session' }));
    await waitFor(() => expect(screen.getByTestId('location').textContent).toBe('/sessions/s1'));
    expect(service.callsTo('POST', '/api/projects/p1/sessions')[0].body).toEqual({
      name: null, model: null, permission_mode: null, max_budget_usd: 2.5,
    });
  });

  it('sends no cap when the field is empty, and shows a spent budget refusing the launch', async () => {
    const spent = "The project's daily budget of $5.00 is spent ($5.2000); it resets at 2026-01-02T00:00:00Z, or when it is raised.";
    service.on('POST', '/api/projects/p1/sessions', { status: 402, body: { error: { code: 'budget_exhausted', message: spent } } });
    renderAt('/projects/p1', routes);
    fireEvent.click(await screen.findByRole('button', { name: 'New session' }));
    const dialog = screen.getByRole('dialog');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Start session' }));
    expect((await within(dialog).findByRole('alert')).textContent).toBe(`Could not start the session: ${spent}`);
    expect(service.callsTo('POST', '/api/projects/p1/sessions')[0].body).not.toHaveProperty('max_budget_usd');
  });
});

describe('a new project', () => {
  it('is created with the budgets set, after a bad one is corrected', async () => {
    service.on('POST', '/api/projects', (req) => ({ status: 201, body: project({ id: 'p2', ...(req.body as Partial<Project>) }) }));
    const created = vi.fn();
    render(
      <QueryClientProvider client={queryClient}>
        <CreateProjectDialog onClose={() => {}} onCreated={created} />
      </QueryClientProvider>,
    );
    const dialog = screen.getByRole('dialog');
    fireEvent.change(within(dialog).getByLabelText('Name'), { target: { value: 'docs' } });
    fireEvent.change(within(dialog).getByLabelText(/^Folder/), { target: { value: 'code/docs' } });
    fireEvent.change(field(dialog, 'budget_daily_usd'), { target: { value: 'ten' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Create project' }));
    expect(await within(dialog).findByText('Enter an amount in USD, like 25 or 7.50, or leave it empty for no budget.')).toBeTruthy();
    expect(service.callsTo('POST', '/api/projects')).toHaveLength(0);

    fireEvent.change(field(dialog, 'budget_daily_usd'), { target: { value: '10' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Create project' }));
    await waitFor(() => expect(created).toHaveBeenCalledWith('p2'));
    expect(service.callsTo('POST', '/api/projects')[0].body).toEqual({
      name: 'docs', folder_path: 'code/docs', description: null, budget_daily_usd: 10,
    });
  });
});
