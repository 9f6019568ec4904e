import { Link } from 'react-router-dom';
import type { Decision } from '../api/client';
import { decisionText } from '../lib/decisionText';
import { ago } from '../lib/format';
import { useCachedRules } from '../query/ruleIndex';
import { DecisionBadge } from './ui';

/** The subject a rule matched against, shortest readable form. */
export function toolSubject(toolInput: string): string {
  try {
    const v = JSON.parse(toolInput) as Record<string, unknown>;
    for (const k of ['command', 'file_path', 'notebook_path', 'path', 'pattern', 'url']) {
      if (typeof v[k] === 'string') return v[k] as string;
    }
  } catch {
    // Not JSON: show it as it is.
  }
  return toolInput;
}

export function DecisionsList({ decisions }: { decisions: Decision[] }) {
  const rules = useCachedRules();
  return (
    <ul className="decisions" data-testid="decisions">
      {decisions.map((d) => (
        <li key={d.id} className={`decision ${d.decision === 'deny' ? 'decision-denied' : ''}`}>
          <DecisionBadge decision={d.decision} />
          <div className="decision-body">
            <div>
              <strong>{d.tool_name}</strong> <code className="subject">{toolSubject(d.tool_input)}</code>
            </div>
            <div className="muted small">
              <span title={d.reason ?? undefined}>{decisionText(d, d.rule_id ? rules.get(d.rule_id) : undefined)}</span>
              {d.session_id && (
                <>
                  {' · '}
                  <Link to={`/sessions/${d.session_id}`} className="muted-link">
                    session
                  </Link>
                </>
              )}
              {' · '}
              {ago(d.decided_at)}
            </div>
          </div>
        </li>
      ))}
    </ul>
  );
}
