// A project's spending against its budgets, on its page: "Spent today $1.20 of $5.00, this month
// $12.00 of $100.00", from the cost ledger (`GET /api/usage` over the UTC day and month, read
// again when a cost is stored: store/usageRefresh.ts), with a warning while a budget is spent.
import { useQuery } from '@tanstack/react-query';
import type { Project } from '../api/client';
import { budgetWindows, isSpent, nextReset } from '../lib/budgets';
import { duration, usd } from '../lib/format';
import { useNow } from '../lib/useNow';
import { usageQuery } from '../query/queries';
import './ProjectBudget.css';

interface Period {
  key: 'day' | 'month';
  /** "today", "this month". */
  when: string;
  /** "daily", "monthly". */
  adjective: string;
  spent: number | undefined;
  cap: number | null;
  failed: boolean;
}

export function ProjectBudget({ project }: { project: Project }) {
  // A minute is fine enough: the windows move at midnight UTC, the reset countdown reads in minutes.
  const now = useNow(60_000);
  const { day, month } = budgetWindows(now);
  const today = useQuery(usageQuery({ group_by: 'project', project_id: project.id, from: day }));
  const thisMonth = useQuery(usageQuery({ group_by: 'project', project_id: project.id, from: month }));
  const periods: Period[] = [
    { key: 'day', when: 'today', adjective: 'daily', spent: today.data?.total.cost_usd, cap: project.budget_daily_usd ?? null, failed: today.isError },
    { key: 'month', when: 'this month', adjective: 'monthly', spent: thisMonth.data?.total.cost_usd, cap: project.budget_monthly_usd ?? null, failed: thisMonth.isError },
  ];
  const spent = periods.filter((p) => isSpent(p.spent, p.cap));
  const none = periods.every((p) => p.cap === null);
  return (
    <section className="budget-state" data-testid="project-budget">
      {spent.length > 0 && (
        <div className="budget-warning" role="status" data-testid="budget-warning">
          {/* Spaces between the parts: the flex layout ignores them, a screen reader does not. */}
          <strong>Budget spent.</strong>{' '}
          {spent.map((p) => (
            <span key={p.key}>
              The {p.adjective} budget of {usd(p.cap)} is spent ({usd(p.spent)} {p.when}); it resets in{' '}
              {duration(Math.ceil((nextReset(p.key, now) - now) / 1000))}.{' '}
            </span>
          ))}
          <span className="muted">New sessions and messages are refused and live sessions are paused until then, or until it is raised in Settings.</span>
        </div>
      )}
      <p className="budget-line" data-testid="budget-line">
        {none && <span className="muted">No budget. </span>}
        {periods.map((p, i) => (
          <span key={p.key} className={spent.includes(p) ? 'budget-spent' : undefined}>
            {i === 0 ? 'Spent ' : ', '}
            {p.when} <strong>{p.failed ? 'unknown' : p.spent === undefined ? '…' : usd(p.spent)}</strong>
            {p.cap !== null ? ` of ${usd(p.cap)}` : none ? '' : ` (no ${p.adjective} budget)`}
          </span>
        ))}
        .
      </p>
    </section>
  );
}
