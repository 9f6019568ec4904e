// Why a live session is not answering: it waits for a usage limit to reset (its turns are kept
// and sent by the service itself), it is paused because a budget is spent, or its turn waits
// for a slot under its project's limit of turns at once.
import { skipToken, useQuery } from '@tanstack/react-query';
import type { Session } from '../api/client';
import { isLive, resumesIn } from '../lib/format';
import { waitingPosition, type TurnWaitingEvent } from '../lib/turnWaiting';
import type { LimitEvent } from '../lib/usageLimits';
import { useNow } from '../lib/useNow';
import { keys } from '../query/client';
import { projectTurnsQuery } from '../query/queries';

/**
 * How often the project's line of turns is read again while the session is idle or running a
 * turn, its project having a limit: frames have it read at once (store/usageRefresh.ts), this
 * is for changes no frame told.
 */
export const TURNS_POLL_MS = 30_000;
const POLLED = ['idle', 'active'];

export function LimitNotice({ session }: { session: Session }) {
  const waiting = session.status === 'waiting_for_limit';
  // Ticks only while there is a countdown to show.
  const now = useNow(1000, waiting);
  // Written by the page's frame listener (lib/useSessionData.ts) and never fetched (`skipToken`):
  // the row does not carry the queue's length, only the `usage.limit_reached` event does.
  const event = useQuery<LimitEvent | null>({ queryKey: keys.limitEvent(session.id), queryFn: skipToken }).data;

  if (session.status === 'paused') {
    return (
      <div className="limit-notice" data-testid="limit-notice">
        <strong>Paused.</strong>
        <span>{session.status_reason ?? 'A budget is spent.'}</span>
        <span className="muted">Messages are refused until the budget allows more.</span>
      </div>
    );
  }
  if (!waiting) return null;
  // An event of an earlier wait (heard before a reload of the row) says nothing of this one.
  const queued = event && event.resumes_at === session.resumes_at ? (event.queued_turns ?? 0) : 0;
  return (
    <div className="limit-notice" data-testid="limit-notice">
      <strong>Waiting for a usage limit.</strong>
      <span>{session.status_reason ?? 'The CLI met a usage limit.'}</span>
      <span className="limit-countdown" title={session.resumes_at ? new Date(session.resumes_at).toLocaleString() : undefined}>
        {resumesIn(session.resumes_at, now)}
      </span>
      {queued > 0 && (
        <span className="muted">
          {queued} turn{queued === 1 ? '' : 's'} queued
        </span>
      )}
    </div>
  );
}

/**
 * A turn waiting for its project's `max_running_turns`: the session stays `idle` until it starts.
 * Said by the `session.turn_waiting` event, and by the project's line of turns, read on opening
 * the page (the event may have come before), again when a frame moves the line
 * (store/usageRefresh.ts), and every `TURNS_POLL_MS` while the session is idle or active.
 */
export function TurnWaitNotice({ session }: { session: Session }) {
  // Written by the page's frame listener (lib/useSessionData.ts) on `session.turn_waiting`, and
  // emptied when the session goes another status than idle; never fetched.
  const event = useQuery<TurnWaitingEvent | null>({ queryKey: keys.turnWaiting(session.id), queryFn: skipToken });
  const line = useQuery({
    ...projectTurnsQuery(session.project_id),
    enabled: isLive(session.status),
    // Not polled for a project known to have no limit: none of its turns can wait.
    refetchInterval: (query) =>
      POLLED.includes(session.status) && query.state.data?.max_running_turns !== null ? TURNS_POLL_MS : false,
  });
  const position = waitingPosition(
    session.id,
    { value: event.data, at: event.dataUpdatedAt },
    { value: line.data, at: line.dataUpdatedAt },
  );
  if (position === null || session.status !== 'idle') return null;
  return (
    <div className="limit-notice" role="status" data-testid="turn-notice">
      {/* Spaces between the parts: the flex layout ignores them, a screen reader does not. */}
      <strong>Waiting for a turn slot:</strong>{' '}
      <span>position {position} in the project&apos;s line.</span>{' '}
      <span className="muted">It starts when one of the project&apos;s running turns ends.</span>
    </div>
  );
}
