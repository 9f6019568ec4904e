import { Link, useParams } from 'react-router-dom';
import type { Session } from '../api/client';
import { DiffView } from '../components/DiffView';
import { ReviewActions } from '../components/ReviewActions';
import { TerminalPanel } from '../components/TerminalPanel';
import { Card, ErrorNote, Loading, StatusBadge } from '../components/ui';
import { useSession } from '../query/review';
import '../tools.css';

/** Whether the session has a worktree of its own: only then is there a branch to diff, commit and merge. */
export function hasWorktree(session: Session): boolean {
  return session.workspace_mode === 'worktree' && Boolean(session.worktree_path);
}

/** A session's changes against its base, commit and merge, and a shell in its workspace. */
export function ReviewPage() {
  const { sessionId = '' } = useParams();
  const session = useSession(sessionId);
  const s = session.data;
  return (
    <div className="page" data-testid="review-page">
      <div className="page-head">
        <div>
          <div className="crumbs">
            {s && (
              <>
                <Link to={`/projects/${s.project_id}`}>project</Link> /{' '}
              </>
            )}
            <Link to={`/sessions/${sessionId}`}>session</Link> / review
          </div>
          <h1>
            Review {s ? s.name : ''}
            {s && <StatusBadge status={s.status} />}
          </h1>
          {s && hasWorktree(s) && (
            <p className="description wrap-anywhere">
              Branch <code>{s.branch}</code> from <code>{s.base_ref ?? 'its base'}</code>, in <code>{s.worktree_path}</code>
            </p>
          )}
        </div>
      </div>
      {session.isPending && <Loading />}
      <ErrorNote error={session.error?.message} what="load the session" />
      {s && !hasWorktree(s) && (
        <Card className="tools-card">
          <div className="note" data-testid="no-worktree">
            This session works in the project's folder itself (workspace mode <code>{s.workspace_mode}</code>), not in
            a worktree of its own, so it has no branch to review, commit or merge. Launch a session in a project whose
            workspace mode is <code>worktree</code> to review its changes here. Its processes are on the{' '}
            <Link to={`/processes?project=${s.project_id}&session=${s.id}`}>Processes</Link> page.
          </div>
        </Card>
      )}
      {s && hasWorktree(s) && (
        <>
          <DiffView sessionId={s.id} />
          <ReviewActions session={s} />
        </>
      )}
      {s && <TerminalPanel session={s} />}
    </div>
  );
}
