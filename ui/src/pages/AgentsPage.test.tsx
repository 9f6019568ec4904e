import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { Agent, ExecutionSummary } from '../api/agents';
import { listenForPageFrames } from '../query/pageFrames';
import { queryClient } from '../query/client';
import { applyFrame } from '../store/live';
import { AgentPage } from './AgentPage';
import { AgentsPage } from './AgentsPage';
import { FakeService, renderAt, sseBody } from './pageTestKit';

const agent = (over: Partial<Agent> = {}): Agent => ({
  id: 'a1', name: 'nightly tests', objective: 'Run the tests and report.', schedule: '0 3 * * *', cwd: '/srv/app',
  timeout_ms: 300_000, status: 'active', consecutive_failures: 0, created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z', workspace_mode: 'shared', agent: 'claude', model: null, project_id: 'p1',
  next_run_at: '2099-01-01T03:00:00Z', next_fire_times: ['2099-01-01T03:00:00Z'], ...over,
});
const run = (over: Partial<ExecutionSummary> = {}): ExecutionSummary => ({
  id: 'e1', agent_id: 'a1', trigger: 'manual', status: 'queued', created_at: '2026-01-02T00:00:00Z', ...over,
});

let service: FakeService;
let stopFrames: () => void;
beforeAll(() => {
  stopFrames = listenForPageFrames();
});
afterAll(() => stopFrames());
beforeEach(() => {
  queryClient.clear();
  service = new FakeService()
    .on('GET', '/api/agents', { body: [agent()] })
    .on('GET', '/api/projects', { body: [{ id: 'p1', name: 'shop', path: '/srv/app' }] })
    .on('GET', '/api/agents/*/executions', { body: [] });
  vi.stubGlobal('fetch', service.fetch);
});
afterEach(() => vi.unstubAllGlobals());

const routes = { '/agents': <AgentsPage />, '/agents/:agentId': <AgentPage /> };

describe('the scheduled agents page', () => {
  it('checks the form, shows the service refusing it, then creates the agent and opens it', async () => {
    let answer: { status: number; body: unknown } = {
      status: 422, body: { error: { code: 'validation_failed', message: 'The schedule "0 3 * * 9" is not a valid cron expression.' } },
    };
    service.on('POST', '/api/agents', () => answer);
    renderAt('/agents', routes);
    expect(await screen.findByText('nightly tests')).toBeTruthy();
    fireEvent.click(screen.getByTestId('agent-new'));
    const form = screen.getByTestId('agent-form');
    const field = (name: string) => form.querySelector(`[name="${name}"]`) as HTMLInputElement;

    fireEvent.change(field('schedule'), { target: { value: 'every day' } });
    fireEvent.click(screen.getByTestId('agent-save'));
    expect(within(form).getByText('Give it a name.')).toBeTruthy();
    expect(within(form).getByText(/Five fields/)).toBeTruthy();
    expect(service.callsTo('POST', '/api/agents')).toHaveLength(0);

    fireEvent.change(field('name'), { target: { value: 'weekly audit' } });
    fireEvent.change(field('objective'), { target: { value: 'Audit the dependencies.' } });
    fireEvent.change(field('schedule'), { target: { value: '0 3 * * 9' } });
    await waitFor(() => expect(within(form).getByRole('option', { name: 'shop' })).toBeTruthy());
    fireEvent.change(field('project_id'), { target: { value: 'p1' } });
    fireEvent.change(field('agent'), { target: { value: 'codex' } });
    fireEvent.change(field('model'), { target: { value: 'gpt-5' } });
    fireEvent.change(field('timeout'), { target: { value: '600' } });
    fireEvent.change(field('workspace_mode'), { target: { value: 'worktree' } });
    fireEvent.change(field('max_budget_usd'), { target: { value: '0.75' } });
    fireEvent.click(screen.getByTestId('agent-save'));
    expect((await within(form).findByRole('alert')).textContent).toBe(
      'Could not create the agent: The schedule "0 3 * * 9" is not a valid cron expression.',
    );

    const created = agent({ id: 'a2', name: 'weekly audit', objective: 'Audit the dependencies.', schedule: '0 3 * * 1' });
    answer = { status: 201, body: created };
    fireEvent.change(field('schedule'), { target: { value: '0 3 * * 1' } });
    fireEvent.click(screen.getByTestId('agent-save'));
    await waitFor(() => expect(screen.getByTestId('location').textContent).toBe('/agents/a2'));
    expect(service.callsTo('POST', '/api/agents')[1].body).toEqual({
      name: 'weekly audit', objective: 'Audit the dependencies.', schedule: '0 3 * * 1', project_id: 'p1',
      agent: 'codex', model: 'gpt-5', timeout_ms: 600_000, workspace_mode: 'worktree', max_budget_usd: 0.75,
    });
    // The new agent's page comes from the cache the answer went into: no read of it.
    expect(await screen.findByTestId('agent-objective')).toHaveProperty('textContent', 'Audit the dependencies.');
    expect(service.callsTo('GET', '/api/agents/a2')).toHaveLength(0);
  });

  it("edits an agent's per-run cost cap: refused at $0, then saved, and shown on its page", async () => {
    service
      .on('GET', '/api/agents/a1', { body: agent({ max_budget_usd: 1.5 }) })
      .on('PUT', '/api/agents/a1', (req) => ({ body: agent({ ...(req.body as Partial<Agent>) }) }));
    renderAt('/agents/a1', routes);
    expect((await screen.findByTestId('agent-cap')).textContent).toBe('$1.50');
    fireEvent.click(screen.getByTestId('agent-edit'));
    const form = screen.getByTestId('agent-form');
    const cap = form.querySelector('[name="max_budget_usd"]') as HTMLInputElement;
    expect(cap.value).toBe('1.5');
    fireEvent.change(cap, { target: { value: '0' } });
    fireEvent.click(screen.getByTestId('agent-save'));
    expect(within(form).getByText('A cap must be more than $0, or empty for none.')).toBeTruthy();
    expect(service.callsTo('PUT', '/api/agents/a1')).toHaveLength(0);
    fireEvent.change(cap, { target: { value: '' } });
    fireEvent.click(screen.getByTestId('agent-save'));
    await waitFor(() => expect(screen.getByTestId('agent-cap').textContent).toBe('none'));
    expect(service.callsTo('PUT', '/api/agents/a1')[0].body).toEqual({ max_budget_usd: null });
  });

  it('follows agent.created, agent.updated and agent.deleted frames without reading the list again', async () => {
    renderAt('/agents', routes);
    await screen.findByText('nightly tests');
    act(() => applyFrame({ event: 'agent_created', type: 'agent.created', data: agent({ id: 'a0', name: 'backup', next_fire_times: undefined as unknown as string[] }) }, 1));
    const names = () => screen.getAllByTestId('agent-row').map((r) => r.querySelector('a')?.textContent);
    // The query cache tells its observers a moment later (its notifications are batched).
    await waitFor(() => expect(names()).toEqual(['backup', 'nightly tests']));
    act(() => applyFrame({ event: 'agent_updated', type: 'agent.updated', data: agent({ status: 'paused' }) }, 2));
    const row = screen.getAllByTestId('agent-row')[1];
    expect(await within(row).findByText('paused', { selector: '.badge' })).toBeTruthy();
    expect(within(row).getByTestId('agent-resume')).toBeTruthy();
    act(() => applyFrame({ event: 'agent_deleted', type: 'agent.deleted', data: { id: 'a0' } }, 3));
    await waitFor(() => expect(names()).toEqual(['nightly tests']));
    expect(service.callsTo('GET', '/api/agents')).toHaveLength(1);
  });

  it('pauses an agent with the answer of the call', async () => {
    service.on('POST', '/api/agents/a1/pause', { body: agent({ status: 'paused' }) });
    renderAt('/agents', routes);
    fireEvent.click(await screen.findByTestId('agent-pause'));
    expect(await screen.findByTestId('agent-resume')).toBeTruthy();
  });
});

describe("an agent's page", () => {
  it('runs it now and shows the run as it streams, then how it ended', async () => {
    const body = sseBody();
    service
      .on('GET', '/api/agents/a1', { body: agent() })
      .on('POST', '/api/agents/a1/trigger', { status: 202, body: run() })
      .on('GET', '/api/executions/e1', { body: { ...run(), output: '', raw_output: '' } })
      .on('GET', '/api/executions/e1/stream', () => ({ stream: body.stream }));
    renderAt('/agents/a1', routes);
    expect(await screen.findByText('No runs yet.')).toBeTruthy();
    fireEvent.click(screen.getByTestId('agent-trigger'));
    await waitFor(() => expect(screen.getByTestId('location').textContent).toBe('/agents/a1?run=e1'));
    expect(screen.getAllByTestId('execution-row')).toHaveLength(1);
    await waitFor(() => expect(service.callsTo('GET', '/api/executions/e1/stream')).toHaveLength(1));
    expect(service.callsTo('GET', '/api/executions/e1/stream')[0].query.get('since')).toBe('0');

    const scoped = { session_id: null, execution_id: 'e1' };
    body.send(1, { event: 'execution_started', type: 'agent.execution.started', seq: 1, ...scoped, data: { ...run(), status: 'running', started_at: '2026-01-02T00:00:01Z' } });
    body.send(2, { event: 'assistant', type: 'agent.execution.output', seq: 2, ...scoped, data: { type: 'assistant' } });
    body.send(3, { event: 'assistant_delta', type: 'assistant.delta', seq: 3, ...scoped, data: { text: 'Running the ' } });
    body.send(4, { event: 'assistant_delta', type: 'assistant.delta', seq: 4, ...scoped, data: { text: 'tests.' } });
    body.send(5, { event: 'tool_started', type: 'tool.started', seq: 5, ...scoped, data: { tool_use_id: 't1', tool: 'Bash', input: { command: 'cargo test' } } });
    const output = screen.getByTestId('execution-output');
    await waitFor(() => expect(within(output).getByText('Running the tests.')).toBeTruthy());
    expect(within(output).getByText('cargo test', { selector: 'summary code' })).toBeTruthy();
    expect(output.getAttribute('data-status')).toBe('running');
    expect(within(screen.getByTestId('agent-executions')).getByText('running')).toBeTruthy();

    body.send(6, { event: 'tool_finished', type: 'tool.finished', seq: 6, ...scoped, data: { tool_use_id: 't1', output: '12 passed', is_error: false } });
    body.send(7, { event: 'turn_result', type: 'turn.result', seq: 7, ...scoped, data: { status: 'completed', is_error: false, text: 'All 12 pass.', cost_usd: 0.02 } });
    body.send(8, { event: 'execution_finished', type: 'agent.execution.finished', seq: 8, ...scoped, data: { ...run(), status: 'success', output: 'All 12 pass.', cost_usd: 0.02, finished_at: '2026-01-02T00:00:09Z', started_at: '2026-01-02T00:00:01Z' } });
    const result = await screen.findByTestId('execution-result');
    expect(within(result).getByText('All 12 pass.')).toBeTruthy();
    expect(within(result).getByText('Raw lines (1)')).toBeTruthy();
    expect(output.getAttribute('data-status')).toBe('success');
    expect(within(output).queryByTestId('execution-cancel')).toBeNull();
    expect(await within(output).findByText('12 passed')).toBeTruthy();
    expect(within(output).getByText('Turn completed · $0.02')).toBeTruthy();
    // Only its first load read the run; everything after came from its stream.
    expect(service.callsTo('GET', '/api/executions/e1')).toHaveLength(1);
  });

  it('shows the lines of a run started with "Run now" on the list that ended before its page read it', async () => {
    const body = sseBody();
    const ended = run({ status: 'success', started_at: '2026-01-02T00:00:01Z', finished_at: '2026-01-02T00:00:01Z' });
    service
      .on('GET', '/api/agents/a1', { body: agent() })
      .on('POST', '/api/agents/a1/trigger', { status: 202, body: run() })
      .on('GET', '/api/executions/e1', { body: { ...ended, output: 'done', raw_output: '{"type":"assistant"}' } })
      .on('GET', '/api/executions/e1/stream', () => ({ stream: body.stream }));
    renderAt('/agents', routes);
    fireEvent.click(await screen.findByTestId('agent-trigger'));
    await waitFor(() => expect(screen.getByTestId('location').textContent).toBe('/agents/a1?run=e1'));
    await waitFor(() => expect(service.callsTo('GET', '/api/executions/e1/stream')).toHaveLength(1));
    expect(service.callsTo('GET', '/api/executions/e1/stream')[0].query.get('since')).toBe('0');
    const scoped = { session_id: null, execution_id: 'e1' };
    body.send(1, { event: 'assistant', type: 'assistant.message', seq: 1, ...scoped, data: { text: 'echo: done' } });
    body.send(2, { event: 'turn_result', type: 'turn.result', seq: 2, ...scoped, data: { status: 'completed', is_error: false, text: 'done' } });
    body.send(3, { event: 'execution_finished', type: 'agent.execution.finished', seq: 3, ...scoped, data: ended });
    const lines = await screen.findByTestId('execution-lines');
    await waitFor(() => expect(within(lines).getByText('echo: done')).toBeTruthy());
    expect(within(lines).getByText('Turn completed')).toBeTruthy();
    expect(screen.getByTestId('execution-output').getAttribute('data-status')).toBe('success');
  });

  it("reads the run again when its end came on the stream before the detail's older answer", async () => {
    const body = sseBody();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const ended = run({ status: 'success', started_at: '2026-01-02T00:00:01Z', finished_at: '2026-01-02T00:00:02Z' });
    let reads = 0;
    service
      .on('GET', '/api/agents/a1', { body: agent() })
      .on('POST', '/api/agents/a1/trigger', { status: 202, body: run() })
      .on('GET', '/api/executions/e1', async () => {
        reads += 1;
        if (reads > 1) return { body: { ...ended, output: 'done', raw_output: '' } };
        await held; // read while it ran, answered after its end
        return { body: { ...run({ status: 'running', started_at: '2026-01-02T00:00:01Z' }), output: '', raw_output: '' } };
      })
      .on('GET', '/api/executions/e1/stream', () => ({ stream: body.stream }));
    renderAt('/agents/a1', routes);
    fireEvent.click(await screen.findByTestId('agent-trigger'));
    await waitFor(() => expect(service.callsTo('GET', '/api/executions/e1/stream')).toHaveLength(1));
    const scoped = { session_id: null, execution_id: 'e1' };
    body.send(1, { event: 'turn_result', type: 'turn.result', seq: 1, ...scoped, data: { status: 'completed', is_error: false, text: 'done' } });
    body.send(2, { event: 'execution_finished', type: 'agent.execution.finished', seq: 2, ...scoped, data: ended });
    await waitFor(() => expect(screen.getByTestId('execution-row').getAttribute('data-status')).toBe('success'));
    release();
    await waitFor(() => expect(screen.getByTestId('execution-output').getAttribute('data-status')).toBe('success'));
    expect(within(await screen.findByTestId('execution-result')).getByText('done')).toBeTruthy();
    expect(reads).toBe(2);
  });

  it('does not follow the stream of a run that had ended when it was opened from the history', async () => {
    const ended = run({ status: 'success', started_at: '2026-01-02T00:00:01Z', finished_at: '2026-01-02T00:00:01Z' });
    service
      .on('GET', '/api/agents/a1', { body: agent() })
      .on('GET', '/api/agents/a1/executions', { body: [ended] })
      .on('GET', '/api/executions/e1', { body: { ...ended, output: 'done', raw_output: '' } });
    renderAt('/agents/a1', routes);
    fireEvent.click(await screen.findByTestId('execution-open'));
    expect(within(await screen.findByTestId('execution-result')).getByText('done')).toBeTruthy();
    expect(screen.queryByTestId('execution-lines')).toBeNull();
    expect(service.callsTo('GET', '/api/executions/e1/stream')).toHaveLength(0);
  });

  it('adds runs from the global stream to the history and cancels a running one', async () => {
    service
      .on('GET', '/api/agents/a1', { body: agent() })
      .on('GET', '/api/executions/e9', { body: { ...run({ id: 'e9', status: 'running', trigger: 'cron' }), output: '', raw_output: '' } })
      .on('GET', '/api/executions/e9/stream', () => ({ stream: sseBody().stream }))
      .on('POST', '/api/executions/e9/cancel', { status: 409, body: { error: { code: 'conflict', message: 'The execution already ended (success).' } } });
    renderAt('/agents/a1', routes);
    await screen.findByText('No runs yet.');
    const scope = { session_id: null, execution_id: 'e9' };
    act(() => applyFrame({ event: 'execution_queued', type: 'agent.execution.queued', ...scope, data: run({ id: 'e9', trigger: 'cron' }) }, 10));
    act(() => applyFrame({ event: 'execution_started', type: 'agent.execution.started', ...scope, data: run({ id: 'e9', trigger: 'cron', status: 'running' }) }, 11));
    const rows = await screen.findAllByTestId('execution-row');
    expect(rows).toHaveLength(1);
    expect(rows[0].getAttribute('data-status')).toBe('running');
    fireEvent.click(within(rows[0]).getByTestId('execution-open'));
    fireEvent.click(await screen.findByTestId('execution-cancel'));
    expect((await screen.findByRole('alert')).textContent).toBe('Could not cancel the run: The execution already ended (success).');
  });
});
