// One entry of the transcript: a turn of the user's, the assistant's text (Markdown), a tool
// call folded with its input, result and decision, a turn's end, a note of the CLI's.
import type { Item } from '../lib/transcript';
import { usd } from '../lib/format';
import { toolSubject } from './DecisionsList';
import { Markdown } from './Markdown';
import { DecisionBadge } from './ui';

export function TranscriptEntry({ item, agent }: { item: Item; agent?: string }) {
  switch (item.kind) {
    case 'user':
      return (
        <>
          <div className="who">You</div>
          <div className="text">{item.text}</div>
        </>
      );
    case 'assistant':
      return (
        <>
          <div className="who">{agentLabel(agent)}</div>
          <Markdown text={item.text} />
        </>
      );
    case 'tool': {
      const input = JSON.stringify(item.input ?? {}, null, 2);
      return (
        <div className="tool">
          <details>
            <summary>
              <span className="tool-name">{item.name}</span>
              <code className="subject">{toolSubject(JSON.stringify(item.input ?? {}))}</code>
              {item.decision && <DecisionBadge decision={item.decision.decision} />}
              {item.result?.isError && <span className="badge decision-deny">error</span>}
            </summary>
            <div className="tool-detail">
              <div className="label">Input</div>
              <pre>{input}</pre>
              {item.result && (
                <>
                  <div className="label">Result</div>
                  <pre className={item.result.isError ? 'tool-error' : ''}>{item.result.text || '(empty)'}</pre>
                </>
              )}
            </div>
          </details>
          {item.decision?.decision === 'deny' && (
            <div className="denied" data-testid="denial">
              Denied: {item.decision.reason ?? 'a deny rule matched'}
            </div>
          )}
        </div>
      );
    }
    case 'result':
      return (
        <div className={`result ${item.interrupted ? 'result-interrupted' : item.ok ? '' : 'result-error'}`}>
          {item.interrupted ? 'Interrupted' : item.ok ? 'Turn finished' : `Turn failed: ${item.text}`}
          {item.cost !== undefined && <span> · {usd(item.cost)} so far</span>}
          {item.durationMs !== undefined && <span> · {(item.durationMs / 1000).toFixed(1)} s</span>}
        </div>
      );
    case 'system':
      return <div className="system">{item.text}</div>;
    case 'stderr':
      return <pre className="stderr">{item.text}</pre>;
  }
}

/** What the assistant is called on screen. */
export function agentLabel(agent: string | undefined): string {
  switch (agent) {
    case undefined:
    case 'claude':
      return 'Claude';
    case 'codex':
      return 'Codex';
    case 'gemini':
      return 'Gemini';
    default:
      return agent;
  }
}
