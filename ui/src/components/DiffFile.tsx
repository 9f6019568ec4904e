import { useMemo, useState } from 'react';
import type { FileChange } from '../api/tools';
import { patchHtml } from '../lib/diff';

/** One changed file: its status and line counts, and (once opened) its coloured patch. */
export function DiffFile(props: { file: FileChange; patch: string | undefined; open: boolean }) {
  const { file, patch } = props;
  const [open, setOpen] = useState(props.open);
  return (
    <details className="diff-file" data-testid="diff-file" open={open} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        <span className={`badge status-${file.status}`}>{file.status}</span>
        <span className="diff-path">
          {file.old_path && file.old_path !== file.path ? `${file.old_path} → ${file.path}` : file.path}
        </span>
        {file.additions === null || file.additions === undefined ? (
          <span className="muted small">binary</span>
        ) : (
          <span className="small">
            <span className="diff-stat-add">+{file.additions}</span> <span className="diff-stat-del">−{file.deletions ?? 0}</span>
          </span>
        )}
      </summary>
      {open && <PatchBody patch={patch} path={file.path} binary={file.additions === null || file.additions === undefined} />}
    </details>
  );
}

function PatchBody(props: { patch: string | undefined; path: string; binary: boolean }) {
  // Colouring is the costly part: done once per patch, only for files opened.
  const html = useMemo(() => (props.patch ? patchHtml(props.patch, props.path) : ''), [props.patch, props.path]);
  if (!props.patch) {
    return (
      <p className="muted small diff-missing">
        {props.binary ? 'A binary file: no text to show.' : 'Not in this page of the patch (it reached its size limit).'}
      </p>
    );
  }
  return <pre className="diff-code" dangerouslySetInnerHTML={{ __html: html }} />;
}
