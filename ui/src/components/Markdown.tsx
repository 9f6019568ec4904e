// The assistant's text as Markdown (GitHub's flavour: tables, task lists, strikethrough), code
// blocks highlighted. Raw HTML in the text is shown as text, never rendered: the text comes from
// a model that reads untrusted files.
import { memo, type ComponentProps } from 'react';
import ReactMarkdown, { type Components } from 'react-markdown';
import remarkGfm from 'remark-gfm';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import diff from 'highlight.js/lib/languages/diff';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';
import yaml from 'highlight.js/lib/languages/yaml';
import 'highlight.js/styles/github.css';

// Only these (the core plus a handful keeps the bundle small); other languages stay plain.
hljs.registerLanguage('bash', bash);
hljs.registerLanguage('diff', diff);
hljs.registerLanguage('javascript', javascript);
hljs.registerLanguage('json', json);
hljs.registerLanguage('python', python);
hljs.registerLanguage('rust', rust);
hljs.registerLanguage('typescript', typescript);
hljs.registerLanguage('yaml', yaml);
hljs.registerAliases(['sh', 'shell', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['rs'], { languageName: 'rust' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['patch'], { languageName: 'diff' });

/** Code longer than this is shown plain: highlighting it would hold the page up. */
const MAX_HIGHLIGHT = 100_000;

function Code({ className, children, node: _node, ...rest }: ComponentProps<'code'> & { node?: unknown }) {
  const language = /language-([\w+-]+)/.exec(className ?? '')?.[1];
  const text = typeof children === 'string' ? children : null;
  if (language && text !== null && text.length <= MAX_HIGHLIGHT && hljs.getLanguage(language)) {
    // highlight.js escapes the code it wraps in its spans: the result holds no markup of the text's.
    const html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
    return <code {...rest} className={`hljs language-${language}`} dangerouslySetInnerHTML={{ __html: html }} />;
  }
  return (
    <code {...rest} className={className}>
      {children}
    </code>
  );
}

function Link({ node: _node, ...props }: ComponentProps<'a'> & { node?: unknown }) {
  return <a {...props} target="_blank" rel="noopener noreferrer" />;
}

const components: Components = { code: Code, a: Link };
const plugins = [remarkGfm];

/** Renders again only when the text changes (the transcript rebuilds its items often). */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown remarkPlugins={plugins} components={components} skipHtml={false}>
        {text}
      </ReactMarkdown>
    </div>
  );
});
