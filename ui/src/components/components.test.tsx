import { render, screen, within } from '@testing-library/react';
import { MemoryRouter } from 'react-router-dom';
import type { Decision, Session } from '../api/client';
import { applyFrame, useLive } from '../store/live';
import { CostChart } from './CostChart';
import { DecisionsList } from './DecisionsList';
import { ExecutionsTable } from './ExecutionsTable';
import { SessionsTable } from './SessionsTable';
import { Transcript } from './Transcript';

const decision = (over: Partial<Decision>): Decision => ({
  id: 1, request_id: 'r', decision_point: 'hook', tool_name: 'Bash', tool_input: '{"command":"ls"}', decision: 'allow',
  decision_source: 'auto_default', decided_at: new Date().toISOString(), ...over,
});

describe('Transcript', () => {
  it('explains an empty conversation in words', () => {
    render(<Transcript items={[]} />);
    expect(screen.getByText('Nothing said yet.')).toBeTruthy();
  });

  it('shows text, a collapsed tool call with its denial, and the result with cost', () => {
    const deny = decision({ decision: 'deny', reason: 'Denied by rule abc (Bash rm:*)', tool_input: '{"command":"rm x"}' });
    render(
      <Transcript
        items={[
          { kind: 'user', key: '1', at: '', text: 'clean up' },
          { kind: 'assistant', key: '2', at: '', text: 'On it.' },
          { kind: 'tool', key: '3', at: '', toolUseId: 't', name: 'Bash', input: { command: 'rm x' }, decision: deny, result: { text: 'nope', isError: true } },
          { kind: 'result', key: '4', at: '', ok: true, text: 'done', cost: 0.5, durationMs: 2000 },
        ]}
      />,
    );
    expect(screen.getByText('clean up')).toBeTruthy();
    expect(screen.getByText('On it.')).toBeTruthy();
    const details = screen.getByText('Bash').closest('details');
    expect(details?.open).toBe(false);
    expect(within(details as HTMLElement).getByText('rm x')).toBeTruthy();
    expect(screen.getByTestId('denial').textContent).toBe('Denied: Denied by rule abc (Bash rm:*)');
    expect(screen.getByText(/Turn finished/).textContent).toBe('Turn finished · $0.50 so far · 2.0 s');
  });
});

describe('DecisionsList', () => {
  it('highlights denials and shows the command, not the raw JSON', () => {
    render(
      <MemoryRouter>
        <DecisionsList
          decisions={[
            decision({ id: 1, decision: 'deny', tool_input: '{"command":"rm -rf /"}', session_id: 's1' }),
            decision({ id: 2, tool_name: 'Read', tool_input: '{"file_path":"/etc/hosts"}' }),
          ]}
        />
      </MemoryRouter>,
    );
    const rows = screen.getAllByRole('listitem');
    expect(rows[0].className).toContain('decision-denied');
    expect(rows[1].className).not.toContain('decision-denied');
    expect(within(rows[0]).getByText('rm -rf /')).toBeTruthy();
    expect(within(rows[1]).getByText('/etc/hosts')).toBeTruthy();
    expect(within(rows[0]).getByRole('link', { name: 'session' }).getAttribute('href')).toBe('/sessions/s1');
  });
});

describe('SessionsTable', () => {
  it('lists status, model, turns, cost and links each session', () => {
    const s: Session = {
      id: 'abc', project_id: 'p1', name: 'brave otter', status: 'idle', transport: 'stdio', model: 'claude-x',
      total_cost_usd: 1.5, total_input_tokens: 1200, total_output_tokens: 300, num_turns: 4,
      created_at: new Date().toISOString(), last_active_at: new Date().toISOString(),
      workspace_mode: 'shared', agent: 'claude',
    };
    render(
      <MemoryRouter>
        <SessionsTable sessions={[s]} />
      </MemoryRouter>,
    );
    const row = screen.getAllByRole('row')[1];
    expect(within(row).getByRole('link', { name: 'brave otter' }).getAttribute('href')).toBe('/sessions/abc');
    expect(row.textContent).toContain('idle');
    expect(row.textContent).toContain('claude-x');
    expect(row.textContent).toContain('$1.50');
    expect(row.textContent).toContain('1,500');
    expect(row.textContent).toContain('just now');
  });

  it('shows a session waiting for a limit, or paused, in words and a style of its own', () => {
    const s = (id: string, status: Session['status']): Session => ({
      id, project_id: 'p1', name: id, status, transport: 'stdio', total_cost_usd: 0, total_input_tokens: 0,
      total_output_tokens: 0, num_turns: 0, created_at: '', last_active_at: '', workspace_mode: 'shared', agent: 'claude',
    });
    render(
      <MemoryRouter>
        <SessionsTable sessions={[s('w', 'waiting_for_limit'), s('p', 'paused')]} />
      </MemoryRouter>,
    );
    const badges = screen.getAllByRole('row').slice(1).map((r) => r.querySelector('.badge'));
    expect(badges.map((b) => [b?.textContent, b?.className])).toEqual([
      ['waiting for limit', 'badge status-waiting_for_limit'],
      ['paused', 'badge status-paused'],
    ]);
  });
});

describe('ExecutionsTable', () => {
  it('shows a run waiting for a usage limit in words, with when it goes again', () => {
    const resumes = new Date(Date.now() + 90_000).toISOString();
    render(
      <ExecutionsTable
        onOpen={() => undefined}
        executions={[
          { id: 'e2', agent_id: 'a1', trigger: 'cron', status: 'waiting_for_limit', created_at: '2026-01-02T00:00:00Z',
            started_at: '2026-01-02T00:00:01Z', resumes_at: resumes, error: "the CLI met a usage limit: You've hit your limit" },
          { id: 'e1', agent_id: 'a1', trigger: 'cron', status: 'success', created_at: '2026-01-01T00:00:00Z' },
        ]}
      />,
    );
    const [waiting, done] = screen.getAllByTestId('execution-row');
    expect([waiting.querySelector('.badge')?.textContent, waiting.querySelector('.badge')?.className]).toEqual([
      'waiting for limit',
      'badge run-waiting_for_limit',
    ]);
    expect(within(waiting).getByTestId('execution-resumes').textContent).toMatch(/^resumes in 1m \d+s$/);
    expect(within(waiting).getByText(/met a usage limit/)).toBeTruthy();
    expect(waiting.textContent).not.toContain('so far');
    expect(within(done).queryByTestId('execution-resumes')).toBeNull();
  });
});

describe('CostChart', () => {
  it('draws one bar per day, the tallest for the most expensive, and says when there is nothing', () => {
    const { container, rerender } = render(
      <CostChart days={[{ day: '2026-01-01', label: '1/1', cost: 1 }, { day: '2026-01-02', label: '1/2', cost: 4 }]} />,
    );
    const heights = [...container.querySelectorAll('rect')].map((r) => Number(r.getAttribute('height')));
    expect(heights).toEqual([27.5, 110]);
    expect(screen.queryByText(/No cost recorded/)).toBeNull();
    rerender(<CostChart days={[{ day: '2026-01-01', label: '1/1', cost: 0 }]} />);
    expect(screen.getByText(/No cost recorded/)).toBeTruthy();
  });
});

describe('the live store', () => {
  it('keeps where a reconnect resumes, and turns to reconnecting when the service says it stops', () => {
    applyFrame({ event: 'stream_event', type: 'stream.event', session_id: 's1' }, 5);
    expect(useLive.getState().lastEventId).toBe(5);
    applyFrame({ event: 'warning', dropped: 12 }, null);
    expect(useLive.getState().lastEventId).toBe(5);
    useLive.setState({ connection: 'live' });
    applyFrame({ event: 'session_closed', type: 'session.closed', session_id: 's1', data: { closed_reason: 'idle_timeout' } }, 6);
    expect(useLive.getState().connection).toBe('live');
    applyFrame({ event: 'session_closed', type: 'session.closed', session_id: 's1', data: { closed_reason: 'shutdown' } }, 7);
    expect(useLive.getState().connection).toBe('reconnecting');
  });
});
