import type { Session, UsageReport } from '../api/client';
import { computeStats, dailyCosts, todayFigures, utcDays } from './stats';
import { ago, usd } from './format';

const session = (over: Partial<Session>): Session => ({
  id: 'x', project_id: 'p', name: 'n', status: 'closed', transport: 'stdio', total_cost_usd: 0,
  total_input_tokens: 0, total_output_tokens: 0, num_turns: 0, created_at: '', last_active_at: '', workspace_mode: 'shared', agent: 'claude',
  ...over,
});

const figures = (cost_usd: number, input_tokens = 0, output_tokens = 0) => ({ cost_usd, input_tokens, output_tokens, turns: 1 });
const byDay = (groups: UsageReport['groups']): UsageReport => ({
  group_by: 'day', from: '2026-11-19T00:00:00.000Z', to: '2026-11-22T16:00:00.000Z', total: figures(0), groups,
});

describe('figures', () => {
  it('counts live sessions and turns', () => {
    const sessions = [
      session({ status: 'idle', num_turns: 3 }),
      session({ status: 'active', num_turns: 1 }),
      session({ status: 'closed', num_turns: 7 }),
    ];
    expect(computeStats(4, sessions)).toEqual({ projects: 4, liveSessions: 2, turns: 11 });
  });

  it('lists the UTC days ending today, across a month end, whatever the local time zone', () => {
    // 00:30 UTC on Dec 1st: still Nov 30th west of Greenwich, but the ledger's day is Dec 1st.
    expect(utcDays(3, new Date(Date.UTC(2026, 11, 1, 0, 30)))).toEqual(['2026-11-29', '2026-11-30', '2026-12-01']);
    expect(utcDays(1, new Date(Date.UTC(2026, 0, 1, 23, 59)))).toEqual(['2026-01-01']);
  });

  it('fills the days a usage report leaves out with 0, always as many bars as days', () => {
    const now = new Date(Date.UTC(2026, 10, 22, 15, 0));
    const report = byDay([
      { key: '2026-11-10', ...figures(9) }, // before the window: not shown
      { key: '2026-11-20', ...figures(2) },
      { key: null, ...figures(5) }, // no day: nothing to put it on
      { key: '2026-11-22', ...figures(0.75) },
    ]);
    expect(dailyCosts(report, 4, now).map((d) => [d.day, d.label, d.cost])).toEqual([
      ['2026-11-19', '11/19', 0], ['2026-11-20', '11/20', 2], ['2026-11-21', '11/21', 0], ['2026-11-22', '11/22', 0.75],
    ]);
    expect(dailyCosts(byDay([]), 14, now)).toHaveLength(14);
    expect(dailyCosts(undefined, 2, now).map((d) => d.cost)).toEqual([0, 0]);
  });

  it("takes today's figures from the report's UTC day, zeros when nothing was spent", () => {
    const now = new Date(Date.UTC(2026, 10, 22, 15, 0));
    expect(todayFigures(byDay([{ key: '2026-11-22', ...figures(0.5, 100, 20) }]), now)).toEqual(figures(0.5, 100, 20));
    expect(todayFigures(byDay([{ key: '2026-11-21', ...figures(3) }]), now)).toEqual({ cost_usd: 0, input_tokens: 0, output_tokens: 0, turns: 0 });
  });

  it('formats money and times for people', () => {
    expect([usd(0), usd(1.234), usd(0.000105), usd(null)]).toEqual(['$0.00', '$1.23', '$0.00011', '$0.00']);
    const t = Date.parse('2026-01-01T12:00:00Z');
    expect(ago('2026-01-01T11:55:00Z', t)).toBe('5 min ago');
    expect(ago('2026-01-01T11:59:58Z', t)).toBe('just now');
    expect(ago(null, t)).toBe('—');
  });
});
