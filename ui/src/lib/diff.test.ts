import { linesOf, patchHtml, patchOf, splitPatch } from './diff';
import { languageOf } from './highlight';

const PATCH = `diff --git a/src/app.ts b/src/app.ts
index 1111111..2222222 100644
--- a/src/app.ts
+++ b/src/app.ts
@@ -1,2 +1,2 @@
 const a = 1;
-const b = 'old';
+const b = 'new';
diff --git a/old name.txt b/new name.txt
similarity index 90%
rename from old name.txt
rename to new name.txt
diff --git a/notes b/notes
new file mode 100644
--- /dev/null
+++ b/notes
@@ -0,0 +1 @@
+<hello>
`;

describe('the diff', () => {
  it('is cut into one patch per file, each found by its header', () => {
    const chunks = splitPatch(PATCH);
    expect(chunks).toHaveLength(3);
    const renamed = { path: 'new name.txt', old_path: 'old name.txt', status: 'renamed' };
    expect(patchOf(renamed, 0, chunks, 3)).toContain('rename to new name.txt');
    expect(patchOf({ path: 'notes', status: 'added' }, 0, chunks, 3)).toContain('+<hello>');
    expect(patchOf({ path: 'missing', status: 'added' }, 5, chunks, 2)).toBeUndefined();
    expect(splitPatch('')).toEqual([]);
  });

  it('tells added, removed, hunk, context and meta lines apart', () => {
    const kinds = linesOf(splitPatch(PATCH)[0]).map((l) => l.kind);
    expect(kinds).toEqual(['meta', 'meta', 'meta', 'meta', 'hunk', 'ctx', 'del', 'add']);
  });

  it('colours code by language and escapes what it shows', () => {
    const [ts, , notes] = splitPatch(PATCH);
    const html = patchHtml(ts, 'src/app.ts');
    expect(html).toContain('<span class="line line-add">+<span class="hljs-keyword">const</span>');
    expect(html).toContain('<span class="hljs-string">&#x27;new&#x27;</span>');
    expect(html).toContain('class="line line-del"');
    // No language for a file without extension: highlight.js's diff colouring, still escaped.
    const plain = patchHtml(notes, 'notes');
    expect(plain).toContain('hljs-addition');
    expect(plain).toContain('&lt;hello&gt;');
    expect(plain).not.toContain('<hello>');
  });

  it('knows a language by extension', () => {
    expect(languageOf('a/b/main.rs')).toBe('rust');
    expect(languageOf('README.md')).toBe('markdown');
    expect(languageOf('Makefile')).toBeNull();
  });
});
