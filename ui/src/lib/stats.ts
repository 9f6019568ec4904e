// The dashboard's figures, computed from the sessions of every project.
import type { Session } from '../api/client';
import { isLive } from './format';

export interface Stats {
  projects: number;
  liveSessions: number;
  turns: number;
  totalCost: number;
  /** Sessions active today (local time): their cost and tokens. */
  todayCost: number;
  todayTokens: number;
}

/** A session's totals are cumulative, so a session counts toward the day it was last active. */
export function computeStats(projects: number, sessions: Session[], now: Date = new Date()): Stats {
  const today = dayKey(now);
  const stats: Stats = { projects, liveSessions: 0, turns: 0, totalCost: 0, todayCost: 0, todayTokens: 0 };
  for (const s of sessions) {
    if (isLive(s.status)) stats.liveSessions += 1;
    stats.turns += s.num_turns;
    stats.totalCost += s.total_cost_usd;
    if (dayKey(new Date(s.last_active_at)) === today) {
      stats.todayCost += s.total_cost_usd;
      stats.todayTokens += s.total_input_tokens + s.total_output_tokens;
    }
  }
  return stats;
}

export interface DayCost {
  day: string;
  label: string;
  cost: number;
}

/** Cost per day of last activity over the `days` days ending today, oldest first, gaps as 0. */
export function costByDay(sessions: Session[], days: number, now: Date = new Date()): DayCost[] {
  const out: DayCost[] = [];
  for (let i = days - 1; i >= 0; i--) {
    const d = new Date(now.getFullYear(), now.getMonth(), now.getDate() - i);
    out.push({ day: dayKey(d), label: `${d.getMonth() + 1}/${d.getDate()}`, cost: 0 });
  }
  const index = new Map(out.map((d, i) => [d.day, i]));
  for (const s of sessions) {
    const i = index.get(dayKey(new Date(s.last_active_at)));
    if (i !== undefined) out[i].cost += s.total_cost_usd;
  }
  return out;
}

export function dayKey(d: Date): string {
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}
