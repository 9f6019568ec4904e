// Small pieces of how a scheduled agent reads on screen.
import type { Agent } from '../api/agents';
import { ago } from '../lib/format';

export function AgentStatusBadge({ status }: { status: Agent['status'] }) {
  return <span className={`badge agent-${status}`}>{status}</span>;
}

/** The next fire times still ahead (a cached list may hold some already past). */
export function upcoming(agent: Agent, now = Date.now()): string[] {
  const times = agent.next_fire_times.filter((t) => Date.parse(t) > now);
  if (times.length === 0 && agent.next_run_at && Date.parse(agent.next_run_at) > now) return [agent.next_run_at];
  return times;
}

/** "in 5 min" for a time ahead ("ago" for one behind). */
export function until(iso: string, now = Date.now()): string {
  const s = Math.round((Date.parse(iso) - now) / 1000);
  if (Number.isNaN(s)) return iso;
  if (s <= 0) return ago(iso, now);
  if (s < 60) return `in ${s} s`;
  if (s < 3600) return `in ${Math.round(s / 60)} min`;
  if (s < 86_400) return `in ${Math.round(s / 3600)} h`;
  return `in ${Math.round(s / 86_400)} days`;
}

export function NextRun({ agent }: { agent: Agent }) {
  if (agent.status !== 'active') return <span className="muted">{agent.status === 'paused' ? 'paused' : 'stopped after failures'}</span>;
  const next = upcoming(agent)[0];
  if (!next) return <span className="muted">—</span>;
  return <span title={new Date(next).toLocaleString()}>{until(next)}</span>;
}
