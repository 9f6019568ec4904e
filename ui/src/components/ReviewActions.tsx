import { useState, type FormEvent } from 'react';
import type { Session } from '../api/client';
import type { MergeStrategy } from '../api/tools';
import { failureOf, useReviewActions, type Failure } from '../query/review';
import { Card } from './ui';

/** Commit everything in the session's worktree on its branch; merge the branch into its base. */
export function ReviewActions({ session }: { session: Session }) {
  const actions = useReviewActions(session.id);
  const [message, setMessage] = useState('');
  const [strategy, setStrategy] = useState<MergeStrategy>('merge_commit');
  const [busy, setBusy] = useState<'commit' | 'merge' | null>(null);
  const [done, setDone] = useState<string>();
  const [failure, setFailure] = useState<Failure & { what: string }>();

  const run = async (what: 'commit' | 'merge', action: () => Promise<string>) => {
    setBusy(what);
    setDone(undefined);
    setFailure(undefined);
    try {
      setDone(await action());
    } catch (e) {
      setFailure({ ...failureOf(e), what });
    } finally {
      setBusy(null);
    }
  };
  const commit = (e: FormEvent) => {
    e.preventDefault();
    void run('commit', async () => {
      const c = await actions.commit(message);
      setMessage('');
      return `Committed ${c.commit.slice(0, 8)} on ${c.branch}.`;
    });
  };
  const merge = () =>
    run('merge', async () => {
      const m = await actions.merge(strategy);
      const how = m.strategy === 'fast_forward' ? 'fast-forward' : 'merge commit';
      return `Merged ${m.branch} into ${m.base_ref} (${how}): ${m.base_ref} is now at ${m.commit.slice(0, 8)}.`;
    });
  const base = session.base_ref ?? 'its base';

  return (
    <Card title="Commit and merge" className="tools-card">
      <div className="review-actions">
        <form className="stack" onSubmit={commit} aria-label="Commit">
          <textarea
            rows={3}
            value={message}
            onChange={(e) => setMessage(e.target.value)}
            placeholder="Commit message"
            aria-label="Commit message"
            maxLength={10000}
          />
          <div className="inline-form">
            <button className="button primary small" disabled={busy !== null || message.trim() === ''}>
              {busy === 'commit' ? 'Committing…' : 'Commit all changes'}
            </button>
            <span className="muted small">Stages everything in the worktree and commits it on {session.branch ?? 'its branch'}.</span>
          </div>
        </form>
        <div className="inline-form" role="group" aria-label="Merge">
          <select value={strategy} onChange={(e) => setStrategy(e.target.value as MergeStrategy)} aria-label="Merge strategy">
            <option value="merge_commit">merge commit</option>
            <option value="fast_forward">fast-forward only</option>
          </select>
          <button className="button small" onClick={() => void merge()} disabled={busy !== null}>
            {busy === 'merge' ? 'Merging…' : `Merge into ${base}`}
          </button>
        </div>
        {done && (
          <div className="ok-note" role="status">
            {done}
          </div>
        )}
        {failure && (
          <div className="error-note" role="alert">
            Could not {failure.what}: {failure.message}
            {failure.files.length > 0 && (
              <ul className="conflict-files" aria-label="Conflicting files">
                {failure.files.map((f) => (
                  <li key={f} className="mono">
                    {f}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
      </div>
    </Card>
  );
}
