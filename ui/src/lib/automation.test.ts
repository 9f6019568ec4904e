import type { Agent } from '../api/agents';
import { checkAgentForm, createBody, EMPTY_AGENT_FORM, updateBody, valuesOf } from './agentForm';
import { applyRunFrame, EMPTY_OUTPUT, type RunOutput } from './executionOutput';
import type { Frame } from './sse';
import { inputSummary } from './toolInput';
import { eventsOf } from './webhookForm';

const agent: Agent = {
  id: 'a1', name: 'audit', objective: 'Audit.', schedule: '0 3 * * *', cwd: '/srv', timeout_ms: 300_000,
  status: 'active', consecutive_failures: 0, created_at: '', updated_at: '', workspace_mode: 'shared',
  agent: 'claude', model: 'sonnet', project_id: null, next_run_at: null, next_fire_times: [],
};

describe('the agent form', () => {
  it('sends only what changed, and an emptied model as null (which clears it)', () => {
    const v = { ...valuesOf(agent), schedule: ' 0 4 * * * ', model: '', timeoutSeconds: '300' };
    expect(updateBody(v, agent)).toEqual({ schedule: '0 4 * * *', model: null });
    expect(updateBody(valuesOf(agent), agent)).toEqual({});
  });

  it('sends a per-run cost cap when set, a changed one, and an emptied one as null', () => {
    const fresh = { ...EMPTY_AGENT_FORM, name: 'audit', objective: 'Audit.' };
    expect(createBody(fresh)).not.toHaveProperty('max_budget_usd');
    expect(createBody({ ...fresh, maxBudgetUsd: '$0.75' }).max_budget_usd).toBe(0.75);
    const capped = { ...agent, max_budget_usd: 2 };
    expect(valuesOf(capped).maxBudgetUsd).toBe('2');
    expect(valuesOf(agent).maxBudgetUsd).toBe('');
    expect(updateBody({ ...valuesOf(capped), maxBudgetUsd: '2.00' }, capped)).toEqual({});
    expect(updateBody({ ...valuesOf(capped), maxBudgetUsd: '3' }, capped)).toEqual({ max_budget_usd: 3 });
    expect(updateBody({ ...valuesOf(capped), maxBudgetUsd: ' ' }, capped)).toEqual({ max_budget_usd: null });
    expect(updateBody({ ...valuesOf(agent), maxBudgetUsd: '1' }, agent)).toEqual({ max_budget_usd: 1 });
  });

  it('refuses a cap of $0, a negative one, or words, in words', () => {
    expect(checkAgentForm({ ...valuesOf(agent), maxBudgetUsd: '0' }, true).maxBudgetUsd).toBe('A cap must be more than $0, or empty for none.');
    expect(checkAgentForm({ ...valuesOf(agent), maxBudgetUsd: '-2' }, true).maxBudgetUsd).toBe('A cap must be more than $0, or empty for none.');
    expect(checkAgentForm({ ...valuesOf(agent), maxBudgetUsd: 'two' }, true).maxBudgetUsd).toBe(
      'Enter an amount in USD, like 2 or 0.50, or leave it empty for no cap.',
    );
  });

  it('refuses what the API would, before calling it', () => {
    const errors = checkAgentForm({ ...valuesOf(agent), agent: 'Claude', model: '-x', timeoutSeconds: '0', cwd: '' }, true);
    expect(Object.keys(errors).sort()).toEqual(['agent', 'cwd', 'model', 'timeoutSeconds']);
    expect(checkAgentForm({ ...valuesOf(agent), schedule: '0 0 3 * * * 2030' }, false)).toEqual({});
  });
});

describe("a run's output", () => {
  const feed = (frames: Frame[]): RunOutput => frames.reduce((s, f, i) => applyRunFrame(s, f, i + 1), EMPTY_OUTPUT);

  it('joins deltas of one item, replaces them with the whole message, and keeps items apart', () => {
    const out = feed([
      { event: 'd', type: 'assistant.delta', data: { text: 'Hel', item_id: 'i1' } },
      { event: 'd', type: 'assistant.delta', data: { text: 'lo', item_id: 'i1' } },
      { event: 'd', type: 'assistant.delta', data: { text: 'Bye', item_id: 'i2' } },
      { event: 'm', type: 'assistant.message', data: { text: 'Bye!', item_id: 'i2' } },
    ]);
    expect(out.entries.map((e) => (e.kind === 'text' ? [e.text, e.done] : e.kind))).toEqual([['Hello', false], ['Bye!', true]]);
    expect(out.lastSeq).toBe(4);
  });

  it('keeps raw lines apart, notes missed events, and ends at the finished frame', () => {
    const out = feed([
      { event: 'assistant', type: 'agent.execution.output', data: { type: 'assistant' } },
      { event: 'warning', dropped: 3 },
      { event: 't', type: 'tool.finished', data: { tool: 'Bash', output: 'x', is_error: true } },
      { event: 'f', type: 'agent.execution.finished', data: {} },
    ]);
    expect(out.raw).toEqual(['{"type":"assistant"}']);
    expect(out.missed).toBe(true);
    expect(out.entries.map((e) => e.kind)).toEqual(['note', 'tool']);
    expect(out.finished).toBe(true);
  });

  it('notes a usage limit without ending: the same run goes again on this stream', () => {
    const out = feed([
      { event: 'r', type: 'turn.result', data: { status: 'failed', is_error: true, text: "You've hit your limit" } },
      { event: 'l', type: 'agent.execution.limit_reached', data: { status: 'waiting_for_limit', resumes_at: '2026-01-02T03:04:05Z' } },
      { event: 's', type: 'agent.execution.started', data: { status: 'running' } },
    ]);
    expect(out.finished).toBe(false);
    const notes = out.entries.filter((e) => e.kind === 'note');
    expect(notes.map((e) => e.kind === 'note' && [e.text.startsWith('Stopped by a usage limit; the run goes again at '), e.bad])).toEqual([
      [true, true],
      [false, undefined],
    ]);
  });
});

describe('small readings', () => {
  it('summarizes a tool input by what it acts on', () => {
    expect(inputSummary('{"command":["git","status"]}')).toBe('git status');
    expect(inputSummary('{"file_path":"/a/b"}')).toBe('/a/b');
    expect(inputSummary('{"x":1}')).toBe('{"x":1}');
    expect(inputSummary('not json')).toBe('not json');
  });

  it("turns the webhook form's event choice into the API's list", () => {
    const base = { name: '', url: '', secret: '', all: false, picked: ['session.result'], other: 'a.b, session.result  c.d' };
    expect(eventsOf(base)).toEqual(['session.result', 'a.b', 'c.d']);
    expect(eventsOf({ ...base, all: true })).toEqual(['*']);
  });
});
