import type { DayCost } from '../lib/stats';
import { usd } from '../lib/format';

/** Bars of cost per day, drawn in SVG (no chart library for fourteen bars). */
export function CostChart({ days }: { days: DayCost[] }) {
  const max = Math.max(...days.map((d) => d.cost), 0);
  const width = 28;
  const gap = 8;
  const height = 110;
  return (
    <div className="chart" data-testid="cost-chart">
      <svg viewBox={`0 0 ${days.length * (width + gap)} ${height + 22}`} role="img" aria-label="Cost per day">
        {days.map((d, i) => {
          const h = max > 0 ? Math.max(2, (d.cost / max) * height) : 2;
          return (
            <g key={d.day} transform={`translate(${i * (width + gap)},0)`}>
              <title>{`${d.day}: ${usd(d.cost)}`}</title>
              <rect x={0} y={height - h} width={width} height={h} rx={4} className={d.cost > 0 ? 'bar' : 'bar bar-empty'} />
              <text x={width / 2} y={height + 16} textAnchor="middle" className="chart-label">
                {i % 2 === days.length % 2 ? '' : d.label}
              </text>
            </g>
          );
        })}
      </svg>
      {max === 0 && <p className="muted small">No cost recorded in these days yet.</p>}
    </div>
  );
}
