// The cost ledger's sums (`GET /api/usage`) come with no event, so the usage queries are read
// again when the stream says the ledger grew: a session row whose totals changed (a turn's
// result was stored) or a scheduled agent's run that finished. A burst of such frames costs one
// read per query, and token-by-token frames none. The usage-limit board (`GET /api/usage/limits`)
// is read again the same way when a session meets a limit or its wait ends, and a project's
// line of turns (`GET /api/projects/{id}/turns`) when one of its sessions changes status or a
// turn starts waiting.
import { hashKey, type QueryClient, type QueryKey } from '@tanstack/react-query';
import type { Session } from '../api/client';
import type { Frame } from '../lib/sse';
import { keys } from '../query/client';
import { isSessionRow } from './framePatches';

/** Frames within this long of the first one share its read. */
export const USAGE_REFRESH_MS = 500;

/** Every cached copy of a session's row (its own query, the live list, its project's list). */
function cachedCopies(client: QueryClient, row: Session): Session[] {
  const copies: Session[] = [];
  const own = client.getQueryData<Session>(keys.session(row.id));
  if (own) copies.push(own);
  for (const key of [keys.activeSessions, keys.projectSessions(row.project_id)]) {
    const listed = client.getQueryData<Session[]>(key)?.find((s) => s.id === row.id);
    if (listed) copies.push(listed);
  }
  return copies;
}

const sameTotals = (a: Session, b: Session) =>
  a.total_cost_usd === b.total_cost_usd &&
  a.total_input_tokens === b.total_input_tokens &&
  a.total_output_tokens === b.total_output_tokens;

/**
 * Whether `frame` means the ledger has a new row. Asked before the frame patches the cache:
 * it compares the frame's totals with the cached ones.
 */
export function storesUsage(client: QueryClient, frame: Frame): boolean {
  const type = frame.type ?? '';
  if (type === 'agent.execution.finished') return true;
  if (!type.startsWith('session.') || !isSessionRow(frame.data)) return false;
  const row = frame.data;
  const copies = cachedCopies(client, row);
  // A session not seen before: something was spent if its totals are not zero.
  if (copies.length === 0) return row.total_cost_usd > 0 || row.total_input_tokens + row.total_output_tokens > 0;
  // Any stale copy will do: the session page's own listener writes the frame's row into the
  // session's query before the cache sync runs (store/live.ts), but not into the lists.
  return copies.some((c) => !sameTotals(c, row));
}

/** Whether `frame` changes the usage-limit board: a session or an agent's run met a limit, or a session's wait ended. */
export function changesLimits(frame: Frame): boolean {
  return frame.type === 'usage.limit_reached' || frame.type === 'usage.limit_reset' || frame.type === 'agent.execution.limit_reached';
}

/** Frames that move a project's line of turns: a session started or ended one, or one waits. */
const TURN_FRAMES = ['session.created', 'session.status', 'session.closed', 'session.error', 'session.turn_waiting'];

/** The project whose line of turns `frame` changes, if any. */
export function changesTurnsOf(frame: Frame): string | null {
  if (!TURN_FRAMES.includes(frame.type ?? '')) return null;
  const data = frame.data;
  if (isSessionRow(data)) return data.project_id;
  const projectId = data && typeof data === 'object' ? (data as { project_id?: unknown }).project_id : undefined;
  return typeof projectId === 'string' ? projectId : null;
}

/** Reads due, one per query root. */
const pending = new Map<string, ReturnType<typeof setTimeout>>();

/**
 * Invalidates `key` in `delayMs`, unless a read of it is already due (it will see this change
 * too). Invalidating reads those on screen now and the others when next shown.
 */
function invalidateSoon(client: QueryClient, key: QueryKey, delayMs: number): void {
  const id = hashKey(key);
  if (pending.has(id)) return;
  pending.set(
    id,
    setTimeout(() => {
      pending.delete(id);
      void client.invalidateQueries({ queryKey: key });
    }, delayMs),
  );
}

/** Reads the usage queries again soon (a burst of stored turns costs one read). */
export function refreshUsageSoon(client: QueryClient, delayMs = USAGE_REFRESH_MS): void {
  invalidateSoon(client, keys.usageAll, delayMs);
}

/** Reads the usage-limit board again soon (several sessions of one account park at once). */
export function refreshLimitsSoon(client: QueryClient, delayMs = USAGE_REFRESH_MS): void {
  invalidateSoon(client, keys.usageLimits, delayMs);
}

/**
 * Reads a project's line of turns again soon (a burst of status frames costs one read), if it
 * was read at all: the page of a project with a limit shows it, a live session's page reads it
 * for its notice of a turn waiting.
 */
export function refreshTurnsSoon(client: QueryClient, projectId: string, delayMs = USAGE_REFRESH_MS): void {
  if (!client.getQueryCache().find({ queryKey: keys.projectTurns(projectId), exact: true })) return;
  invalidateSoon(client, keys.projectTurns(projectId), delayMs);
}

/** For tests: forgets the reads that are due. */
export function cancelUsageRefresh(): void {
  for (const timer of pending.values()) clearTimeout(timer);
  pending.clear();
}
