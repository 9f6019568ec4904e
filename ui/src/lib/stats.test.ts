import type { Session } from '../api/client';
import { computeStats, costByDay } from './stats';
import { ago, usd } from './format';

const session = (over: Partial<Session>): Session => ({
  id: 'x', project_id: 'p', name: 'n', status: 'closed', transport: 'stdio', total_cost_usd: 0,
  total_input_tokens: 0, total_output_tokens: 0, num_turns: 0, created_at: '', last_active_at: '', workspace_mode: 'shared', agent: 'claude',
  ...over,
});

describe('figures', () => {
  const now = new Date(2026, 10, 22, 15, 0);
  const today = new Date(2026, 10, 22, 9, 0).toISOString();
  const twoDaysAgo = new Date(2026, 10, 20, 9, 0).toISOString();
  const sessions = [
    session({ status: 'idle', num_turns: 3, total_cost_usd: 0.5, total_input_tokens: 100, total_output_tokens: 20, last_active_at: today }),
    session({ status: 'active', num_turns: 1, total_cost_usd: 0.25, last_active_at: today }),
    session({ status: 'closed', num_turns: 7, total_cost_usd: 2, total_input_tokens: 999, last_active_at: twoDaysAgo }),
  ];

  it('counts live sessions, turns, and what was spent today', () => {
    expect(computeStats(4, sessions, now)).toEqual({
      projects: 4, liveSessions: 2, turns: 11, totalCost: 2.75, todayCost: 0.75, todayTokens: 120,
    });
  });

  it('puts cost on the day of last activity, with empty days as zero', () => {
    const days = costByDay(sessions, 4, now);
    expect(days.map((d) => [d.label, d.cost])).toEqual([['11/19', 0], ['11/20', 2], ['11/21', 0], ['11/22', 0.75]]);
  });

  it('formats money and times for people', () => {
    expect([usd(0), usd(1.234), usd(0.000105), usd(null)]).toEqual(['$0.00', '$1.23', '$0.00011', '$0.00']);
    const t = Date.parse('2026-01-01T12:00:00Z');
    expect(ago('2026-01-01T11:55:00Z', t)).toBe('5 min ago');
    expect(ago('2026-01-01T11:59:58Z', t)).toBe('just now');
    expect(ago(null, t)).toBe('—');
  });
});
