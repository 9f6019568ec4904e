// A session's unified diff, cut into one patch per file and turned into coloured HTML: each
// line gets its kind's background (added, removed, hunk, meta) and its code the file's syntax
// colours, or, for files in no language we know, highlight.js's own `diff` colouring.
import type { FileChange } from '../api/tools';
import { escapeHtml, highlight, languageOf } from './highlight';

/** Past this many lines a file is shown without syntax colours (they cost time per line). */
export const MAX_COLOURED_LINES = 4000;

/** The patch text cut before each `diff --git` line. */
export function splitPatch(patch: string): string[] {
  if (!patch) return [];
  const parts = patch.split(/^(?=diff --git )/m);
  return parts.filter((p) => p.startsWith('diff --git '));
}

/**
 * The patch of `file` among `chunks`: found by its header (`a/<old> b/<new>`), by its `+++` or
 * `rename to` line, or (when every file has its patch, in order) by position.
 */
export function patchOf(file: FileChange, index: number, chunks: string[], files: number): string | undefined {
  const header = `diff --git a/${file.old_path ?? file.path} b/${file.path}`;
  const found =
    chunks.find((c) => c.startsWith(`${header}\n`)) ??
    chunks.find((c) => c.includes(`\n+++ b/${file.path}\n`) || c.includes(`\nrename to ${file.path}\n`) || c.includes(`\n--- a/${file.path}\n`));
  if (found) return found;
  return chunks.length === files ? chunks[index] : undefined;
}

export type LineKind = 'add' | 'del' | 'hunk' | 'meta' | 'ctx';

export function kindOf(line: string, inHunk: boolean): LineKind {
  if (!inHunk) return line.startsWith('@@') ? 'hunk' : 'meta';
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  if (line.startsWith('\\')) return 'meta';
  return 'ctx';
}

/** The lines of a file's patch with their kinds (a trailing newline makes no empty last line). */
export function linesOf(patch: string): { kind: LineKind; text: string }[] {
  const raw = patch.endsWith('\n') ? patch.slice(0, -1).split('\n') : patch.split('\n');
  let inHunk = false;
  return raw.map((text) => {
    const kind = kindOf(text, inHunk);
    if (kind === 'hunk') inHunk = true;
    return { kind, text };
  });
}

/** The patch as HTML: one block `span.line.line-<kind>` per line, code coloured. */
export function patchHtml(patch: string, path: string): string {
  const lines = linesOf(patch);
  const coloured = lines.length <= MAX_COLOURED_LINES;
  const language = coloured ? languageOf(path) : null;
  return lines
    .map(({ kind, text }) => {
      let body: string;
      if (language && (kind === 'add' || kind === 'del' || kind === 'ctx')) {
        body = escapeHtml(text.slice(0, 1)) + highlight(text.slice(1), language);
      } else if (coloured && !language) {
        body = highlight(text, 'diff');
      } else {
        body = escapeHtml(text);
      }
      // The newline inside the block keeps copied text in lines; a space keeps an empty line's height.
      return `<span class="line line-${kind}">${body || ' '}\n</span>`;
    })
    .join('');
}
