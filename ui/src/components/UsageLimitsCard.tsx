// The dashboard's "Usage limits" card: agent CLIs whose account is at a limit or near one. Absent
// when every account is allowed (or none reported), and when the board cannot be read: it is
// news, not a panel to keep an eye on.
import { useQuery } from '@tanstack/react-query';
import { limitsToShow, limitTypeLabel, utilizationLabel } from '../lib/usageLimits';
import { useNow } from '../lib/useNow';
import { usageLimitsQuery } from '../query/queries';
import { until } from './AgentStatus';
import { Card } from './ui';

export function UsageLimitsCard() {
  const limits = useQuery(usageLimitsQuery());
  const shown = limitsToShow(limits.data);
  // The reset times read relative to now: a minute is fine enough for "in 3 h".
  const now = useNow(30_000, shown.length > 0);
  if (shown.length === 0) return null;
  return (
    <Card title="Usage limits" testId="usage-limits">
      <div className="table-scroll">
        <table className="table compact">
          <thead>
            <tr>
              <th>Agent</th>
              <th>Status</th>
              <th>Resets</th>
              <th>Limit</th>
              <th className="num">Used</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((l) => (
              <tr key={l.agent} title={l.message ?? undefined}>
                <td className="mono">{l.agent}</td>
                <td>
                  <span className={`badge limit-${l.status}`}>{l.status}</span>
                </td>
                <td title={l.resets_at ? new Date(l.resets_at).toLocaleString() : undefined}>
                  {l.resets_at ? until(l.resets_at, now) : '—'}
                </td>
                <td>{limitTypeLabel(l.limit_type)}</td>
                <td className="num">{utilizationLabel(l.utilization)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
