import { Link } from 'react-router-dom';
import type { Project, Session } from '../api/client';
import { ago, count, usd } from '../lib/format';
import { StatusBadge } from './ui';

export function SessionsTable(props: { sessions: Session[]; projects?: Project[]; testId?: string }) {
  const projectName = (id: string) => props.projects?.find((p) => p.id === id)?.name ?? '—';
  // Wide on a phone: the table scrolls in its box, never the page.
  return (
    <div className="table-scroll">
      <table className="table" data-testid={props.testId}>
        <thead>
          <tr>
            <th>Session</th>
            {props.projects && <th>Project</th>}
            <th>Status</th>
            <th>Model</th>
            <th className="num">Turns</th>
            <th className="num">Tokens</th>
            <th className="num">Cost</th>
            <th>Last active</th>
          </tr>
        </thead>
        <tbody>
          {props.sessions.map((s) => (
            <tr key={s.id}>
              <td>
                <Link to={`/sessions/${s.id}`}>{s.name}</Link>
              </td>
              {props.projects && (
                <td>
                  <Link to={`/projects/${s.project_id}`} className="muted-link">
                    {projectName(s.project_id)}
                  </Link>
                </td>
              )}
              <td>
                <StatusBadge status={s.status} />
              </td>
              <td className="mono">{s.model ?? 'default'}</td>
              <td className="num">{s.num_turns}</td>
              <td className="num">{count(s.total_input_tokens + s.total_output_tokens)}</td>
              <td className="num">{usd(s.total_cost_usd)}</td>
              <td className="muted">{ago(s.last_active_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
