// The dashboard's figures. Counts come from the sessions of every project; money and tokens
// from the cost ledger (`GET /api/usage`), which also holds what scheduled agents' runs cost
// (no session row does) and puts each turn's cost on the day it was spent.
import type { Figures, Session, UsageReport } from '../api/client';
import { isLive } from './format';

export interface Stats {
  projects: number;
  liveSessions: number;
  turns: number;
}

export function computeStats(projects: number, sessions: Session[]): Stats {
  const stats: Stats = { projects, liveSessions: 0, turns: 0 };
  for (const s of sessions) {
    if (isLive(s.status)) stats.liveSessions += 1;
    stats.turns += s.num_turns;
  }
  return stats;
}

export interface DayCost {
  day: string;
  label: string;
  cost: number;
}

/** `YYYY-MM-DD` of the UTC day `d` falls in: the ledger's days are UTC days. */
export function utcDate(d: Date): string {
  return d.toISOString().slice(0, 10);
}

/** The `days` UTC dates ending with today's, oldest first. */
export function utcDays(days: number, now: Date = new Date()): string[] {
  const out: string[] = [];
  for (let i = days - 1; i >= 0; i--) {
    out.push(utcDate(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - i))));
  }
  return out;
}

/**
 * Cost per day over the `days` UTC days ending today, oldest first, from a `group_by=day`
 * report. The report leaves out days with nothing spent: they are 0, so there are always
 * `days` bars.
 */
export function dailyCosts(report: UsageReport | undefined, days: number, now: Date = new Date()): DayCost[] {
  const spent = new Map<string, number>();
  for (const g of report?.groups ?? []) if (g.key) spent.set(g.key, g.cost_usd);
  return utcDays(days, now).map((day) => ({
    day,
    label: `${Number(day.slice(5, 7))}/${Number(day.slice(8, 10))}`,
    cost: spent.get(day) ?? 0,
  }));
}

const NOTHING: Figures = { cost_usd: 0, input_tokens: 0, output_tokens: 0, turns: 0 };

/** Today's (UTC) sums in a `group_by=day` report; zeros when nothing was spent today. */
export function todayFigures(report: UsageReport | undefined, now: Date = new Date()): Figures {
  const today = utcDate(now);
  const group = report?.groups.find((g) => g.key === today);
  return group ? { cost_usd: group.cost_usd, input_tokens: group.input_tokens, output_tokens: group.output_tokens, turns: group.turns } : NOTHING;
}
