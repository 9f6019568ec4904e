import { useEffect, useState } from 'react';
import { splitPatch, patchOf } from '../lib/diff';
import { DIFF_FILES_PAGE, useDiff, useReviewActions } from '../query/review';
import { onFrame } from '../store/live';
import { DiffFile } from './DiffFile';
import { Card, Empty, ErrorNote, Loading } from './ui';

/** Files opened at first (the rest open on a click: colouring a large diff takes time). */
const OPEN_AT_FIRST = 12;
/** Frames after which the files on disk may differ from the diff shown. */
const CHANGES_FILES = new Set(['tool.finished', 'turn.result']);

/** What a worktree session changed against its base, a page of files at a time. */
export function DiffView({ sessionId }: { sessionId: string }) {
  const [offset, setOffset] = useState(0);
  const diff = useDiff(sessionId, offset, true);
  const { refresh } = useReviewActions(sessionId);
  const outdated = useOutdated(sessionId, diff.dataUpdatedAt);
  const data = diff.data;
  const chunks = splitPatch(data?.patch ?? '');
  const files = data?.files ?? [];
  const added = files.reduce((n, f) => n + (f.additions ?? 0), 0);
  const removed = files.reduce((n, f) => n + (f.deletions ?? 0), 0);
  const total = data?.total_files ?? 0;

  return (
    <Card
      className="tools-card"
      title="Changes"
      actions={
        <button className="button small ghost" onClick={() => void refresh()} disabled={diff.isFetching}>
          {diff.isFetching ? 'Reading…' : 'Refresh'}
        </button>
      }
    >
      <div className="stack">
        {outdated && (
          <div className="note">
            The agent has worked since this diff was read.{' '}
            <button className="button small ghost" onClick={() => void refresh()}>
              Read it again
            </button>
          </div>
        )}
        {diff.isPending && <Loading />}
        <ErrorNote error={diff.error?.message} what="read the diff" />
        {data && (
          <div className="diff-summary" data-testid="diff-summary">
            <strong>
              {total} {total === 1 ? 'file' : 'files'} changed
            </strong>
            {files.length > 0 && (
              <span>
                <span className="diff-stat-add">+{added}</span> <span className="diff-stat-del">−{removed}</span>
                {files.length < total && <span className="muted small"> on this page</span>}
              </span>
            )}
            {data.branch && (
              <span className="muted small wrap-anywhere">
                {data.branch} against {data.base_ref ?? 'its base'}
                {data.base_commit ? ` (${data.base_commit.slice(0, 8)})` : ''}
              </span>
            )}
          </div>
        )}
        {data && total === 0 && <Empty title="No changes yet.">The session's worktree is the same as its base.</Empty>}
        {data?.truncated && (
          <div className="muted small">The patch was cut at its size limit: the last files of this page have no text.</div>
        )}
        <div className="diff-files">
          {files.map((file, i) => (
            <DiffFile
              key={`${offset}:${file.path}`}
              file={file}
              patch={patchOf(file, i, chunks, files.length)}
              open={i < OPEN_AT_FIRST}
            />
          ))}
        </div>
        {total > DIFF_FILES_PAGE && (
          <div className="inline-form">
            <button className="button small ghost" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - DIFF_FILES_PAGE))}>
              Previous files
            </button>
            <span className="muted small">
              files {offset + 1}–{Math.min(total, offset + DIFF_FILES_PAGE)} of {total}
            </span>
            <button className="button small ghost" disabled={offset + DIFF_FILES_PAGE >= total} onClick={() => setOffset(offset + DIFF_FILES_PAGE)}>
              Next files
            </button>
          </div>
        )}
      </div>
    </Card>
  );
}

/**
 * True once the session finished a tool call or a turn after the diff was read: the files may
 * have changed. The page says so instead of reading the diff again on every such frame.
 */
function useOutdated(sessionId: string, readAt: number): boolean {
  const [changedAt, setChangedAt] = useState(0);
  useEffect(
    () =>
      onFrame((frame) => {
        if (frame.session_id === sessionId && frame.type && CHANGES_FILES.has(frame.type)) setChangedAt(Date.now());
      }),
    [sessionId],
  );
  return readAt > 0 && changedAt > readAt;
}
