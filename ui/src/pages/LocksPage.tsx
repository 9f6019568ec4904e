import { useQuery } from '@tanstack/react-query';
import type { LockState } from '../api/tools';
import { tools } from '../api/tools';
import { Card, Empty, ErrorNote, Loading } from '../components/ui';
import { ago } from '../lib/format';
import { keys } from '../query/client';
import '../tools.css';

/** How often the lock queue is read again while this page is open and visible. */
export const LOCKS_REFRESH_MS = 5000;

/**
 * The per-folder lock queue of scheduled agent runs: who holds each folder and who waits.
 *
 * Locks have no events on the live stream (taking and releasing a lock is internal to the
 * agent scheduler), so this is the one page that polls: every 5 s while it is mounted and the
 * tab is visible. TanStack Query pauses `refetchInterval` when the document is hidden (its
 * focus manager follows `visibilitychange`; `refetchIntervalInBackground` stays false) and
 * stops it when the page unmounts, so a tab left in the background costs the service nothing.
 */
export function LocksPage() {
  const locks = useQuery({
    queryKey: keys.locks,
    queryFn: tools.locks,
    refetchInterval: LOCKS_REFRESH_MS,
    refetchIntervalInBackground: false,
    // No events keep this fresh: read it again whenever the page opens.
    staleTime: 0,
  });
  const list = locks.data ?? [];
  return (
    <div className="page" data-testid="locks-page">
      <div className="page-head">
        <div>
          <h1>Locks</h1>
          <p className="description">
            Scheduled agent runs take a folder's lock before they work in it; others wait in line. Read again every{' '}
            {LOCKS_REFRESH_MS / 1000} s while this page is visible.
          </p>
        </div>
      </div>
      <Card
        className="tools-card"
        title={`${list.length} ${list.length === 1 ? 'folder' : 'folders'} locked`}
        actions={
          <>
            {locks.dataUpdatedAt > 0 && <span className="muted small">read {ago(new Date(locks.dataUpdatedAt).toISOString())}</span>}
            <button className="button small ghost" onClick={() => void locks.refetch()} disabled={locks.isFetching}>
              Refresh
            </button>
          </>
        }
      >
        {locks.isPending && <Loading />}
        <ErrorNote error={locks.error?.message} what="read the locks" />
        {locks.isSuccess && list.length === 0 && (
          <Empty title="No folder is locked.">No scheduled agent run is working or waiting right now.</Empty>
        )}
        {list.length > 0 && (
          <ul className="locks">
            {list.map((lock) => (
              <LockItem key={lock.path} lock={lock} />
            ))}
          </ul>
        )}
      </Card>
    </div>
  );
}

function LockItem({ lock }: { lock: LockState }) {
  return (
    <li className="lock" data-testid="lock">
      <div className="lock-path mono">{lock.path}</div>
      <div className="lock-holder">
        <span className="muted small">held by</span>
        {lock.holder ? (
          <>
            <strong className="wrap-anywhere">{lock.holder.holder}</strong>
            <span className="muted small" title={lock.holder.since}>
              since {ago(lock.holder.since)}
            </span>
          </>
        ) : (
          <span className="muted">nobody (being handed over)</span>
        )}
      </div>
      {lock.waiters.length > 0 ? (
        <ol className="lock-waiters" aria-label="Waiting, in order">
          {lock.waiters.map((w, i) => (
            <li key={`${w.holder}-${i}`}>
              {w.holder}{' '}
              <span className="muted small" title={w.since}>
                waiting since {ago(w.since)}
              </span>
            </li>
          ))}
        </ol>
      ) : (
        <div className="muted small">Nobody waits.</div>
      )}
    </li>
  );
}
