// Why a live session is not answering: it waits for a usage limit to reset (its turns are kept
// and sent by the service itself), or it is paused because a budget is spent.
import { skipToken, useQuery } from '@tanstack/react-query';
import type { Session } from '../api/client';
import { resumesIn } from '../lib/format';
import type { LimitEvent } from '../lib/usageLimits';
import { useNow } from '../lib/useNow';
import { keys } from '../query/client';

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
