import type { Item } from '../lib/transcript';
import { toolSubject } from './DecisionsList';
import { usd } from '../lib/format';
import { DecisionBadge, Empty } from './ui';

export function Transcript({ items }: { items: Item[] }) {
  if (items.length === 0) {
    return <Empty title="Nothing said yet.">Send a message below; the conversation appears here as it happens.</Empty>;
  }
  return (
    <ol className="transcript" data-testid="transcript">
      {items.map((item) => (
        <li key={item.key} className={`entry entry-${item.kind}`}>
          <Entry item={item} />
        </li>
      ))}
    </ol>
  );
}

function Entry({ item }: { item: Item }) {
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
          <div className="who">Claude</div>
          <div className="text">{item.text}</div>
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
        <div className={`result ${item.ok ? '' : 'result-error'}`}>
          {item.ok ? 'Turn finished' : `Turn failed: ${item.text}`}
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
