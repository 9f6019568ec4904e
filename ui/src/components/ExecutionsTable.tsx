// An agent's run history, newest first; a row opens the run's output.
import type { Execution, ExecutionStatus, ExecutionSummary } from '../api/agents';
import { ago, count, resumesIn, statusLabel, usd } from '../lib/format';
import { Empty } from './ui';

export function ExecutionStatusBadge({ status }: { status: ExecutionStatus }) {
  return <span className={`badge run-${status}`}>{statusLabel(status)}</span>;
}

/** How long a run took (or has been running); a run waiting for a limit is not running. */
export function runTook(e: ExecutionSummary | Execution, now = Date.now()): string {
  if (!e.started_at || e.status === 'waiting_for_limit') return '—';
  const end = e.finished_at ? Date.parse(e.finished_at) : now;
  const ms = Math.max(0, end - Date.parse(e.started_at));
  const s = ms / 1000;
  const text = s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return e.finished_at ? text : `${text} so far`;
}

export function ExecutionsTable(props: {
  executions: ExecutionSummary[];
  selected?: string | null;
  onOpen: (executionId: string) => void;
}) {
  if (props.executions.length === 0) {
    return <Empty title="No runs yet.">It runs on its schedule, or now with “Run now”.</Empty>;
  }
  return (
    <div className="table-scroll">
      <table className="table compact" data-testid="agent-executions">
        <thead>
          <tr>
            <th>Status</th>
            <th>Trigger</th>
            <th>Queued</th>
            <th>Took</th>
            <th className="num">Cost</th>
            <th className="num">Tokens</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {props.executions.map((e) => (
            <tr key={e.id} className={e.id === props.selected ? 'row-selected' : ''} data-testid="execution-row" data-status={e.status}>
              <td>
                <ExecutionStatusBadge status={e.status} />
                {e.status === 'waiting_for_limit' && <LimitWait resumesAt={e.resumes_at} />}
                {e.error && <div className="small tool-error clamp cell-text" title={e.error}>{e.error}</div>}
              </td>
              <td>{e.trigger}</td>
              <td title={new Date(e.created_at).toLocaleString()}>{ago(e.created_at)}</td>
              <td>{runTook(e)}</td>
              <td className="num">{e.cost_usd == null ? '—' : usd(e.cost_usd)}</td>
              <td className="num">{e.input_tokens == null ? '—' : count((e.input_tokens ?? 0) + (e.output_tokens ?? 0))}</td>
              <td className="row-actions">
                <button className="button small" data-testid="execution-open" onClick={() => props.onOpen(e.id)}>
                  Output
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** When a run a usage limit stopped goes again (the service runs it by itself). */
export function LimitWait({ resumesAt }: { resumesAt?: string | null }) {
  return (
    <div className="small muted" data-testid="execution-resumes" title={resumesAt ? new Date(resumesAt).toLocaleString() : undefined}>
      {resumesIn(resumesAt)}
    </div>
  );
}
