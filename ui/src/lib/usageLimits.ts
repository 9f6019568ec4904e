// How usage limits read on screen: the events' data, and the board's (`GET /api/usage/limits`)
// entries worth showing.
import type { LimitView } from '../api/client';
import type { Frame } from './sse';

/** The data of `usage.limit_reached` and `usage.limit_reset` (the same shape). */
export interface LimitEvent {
  session_id: string;
  project_id?: string;
  agent?: string;
  status?: string;
  resumes_at?: string | null;
  resets_at?: string | null;
  limit_type?: string | null;
  kind?: 'usage_limit' | 'rate_limit' | null;
  message?: string | null;
  /** Turns kept for after the wait, when the event was sent. */
  queued_turns?: number;
}

/** A limit frame's data, with its session (from the data, else from the frame). */
export function limitEventOf(frame: Frame): LimitEvent | null {
  if (frame.type !== 'usage.limit_reached' && frame.type !== 'usage.limit_reset') return null;
  const data = frame.data;
  if (typeof data !== 'object' || data === null) return null;
  const d = data as Partial<LimitEvent>;
  const sessionId = typeof d.session_id === 'string' ? d.session_id : frame.session_id;
  return sessionId ? { ...d, session_id: sessionId } : null;
}

/** The entries to show: limited first, then warnings; an account still allowed is no news. */
export function limitsToShow(limits: LimitView[] | undefined): LimitView[] {
  const rank = (l: LimitView) => (l.status === 'limited' ? 0 : 1);
  return (limits ?? []).filter((l) => l.status !== 'allowed').sort((a, b) => rank(a) - rank(b) || a.agent.localeCompare(b.agent));
}

/** `five_hour` reads "five hour"; an unnamed limit "—". */
export function limitTypeLabel(type: string | null | undefined): string {
  return type ? type.replace(/_/g, ' ') : '—';
}

/** 0.87 reads "87%"; unknown "—". */
export function utilizationLabel(u: number | null | undefined): string {
  return typeof u === 'number' && Number.isFinite(u) ? `${Math.round(u * 100)}%` : '—';
}
