import type { ProcessRow } from '../api/tools';
import { ago } from '../lib/format';

interface Props {
  rows: ProcessRow[];
  selected: string | null;
  onSelect: (row: ProcessRow) => void;
  onKill: (row: ProcessRow) => void;
  /** Ids whose kill was asked for and whose end has not come yet. */
  ending: Set<string>;
}

/** Commands and background processes, newest first, with their end and output size. */
export function ProcessTable(props: Props) {
  return (
    <div className="scroll-box">
      <table className="table compact">
        <thead>
          <tr>
            <th>Command</th>
            <th>Kind</th>
            <th>Status</th>
            <th>Started</th>
            <th>Ended</th>
            <th className="num">Output</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={row.id} className={props.selected === row.id ? 'selected' : undefined} data-testid="process-row">
              <td>
                <div className="process-command mono" title={row.command}>
                  {row.command}
                </div>
                <div className="muted small wrap-anywhere">{row.cwd}</div>
              </td>
              <td>{row.kind}</td>
              <td>
                <span className={`badge status-${row.status}`}>{row.status}</span>
              </td>
              <td title={row.started_at}>{ago(row.started_at)}</td>
              <td>{ending(row)}</td>
              <td className="num">{bytes(row.stdout_bytes + row.stderr_bytes)}</td>
              <td className="row-actions">
                {row.kind === 'background' && (
                  <button className="button small ghost" onClick={() => props.onSelect(row)}>
                    Logs
                  </button>
                )}
                {row.status === 'running' && (
                  <button
                    className="button small danger-ghost"
                    onClick={() => props.onKill(row)}
                    disabled={props.ending.has(row.id)}
                  >
                    {props.ending.has(row.id) ? 'Ending…' : 'Kill'}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** How it ended, in words: exit code, signal, and why Conduit ended it if it did. */
function ending(row: ProcessRow): string {
  if (row.status === 'running') return row.pid ? `pid ${row.pid}` : '';
  const parts: string[] = [];
  if (row.exit_code !== null && row.exit_code !== undefined) parts.push(`exit ${row.exit_code}`);
  if (row.signal) parts.push(`signal ${row.signal}`);
  if (row.end_reason) parts.push(row.end_reason.replace('_', ' '));
  return parts.join(', ') || row.status;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
