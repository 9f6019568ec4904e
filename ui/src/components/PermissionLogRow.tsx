// One decision of the permission log: what was asked, what was decided, by which rule, when.
import { Link } from 'react-router-dom';
import type { Decision, Rule } from '../api/client';
import { ago } from '../lib/format';
import { inputPretty, inputSummary } from '../lib/toolInput';
import { DecisionBadge } from './ui';

/** A rule as its editor shows it: `deny Bash(rm:*)`. */
export function ruleText(rule: Rule): string {
  return `${rule.behavior} ${rule.tool_name}${rule.rule_content ? `(${rule.rule_content})` : ''}`;
}

export function PermissionLogRow(props: { decision: Decision; rule?: Rule; projectName?: string }) {
  const d = props.decision;
  const denied = d.decision === 'deny';
  return (
    <li className={`log-row ${denied ? 'log-denied' : ''}`} data-testid="permission-row" data-decision={d.decision}>
      <div>
        <DecisionBadge decision={d.decision} />
      </div>
      <div className="log-what">
        <div>
          <strong>{d.tool_name}</strong> <code className="subject">{inputSummary(d.tool_input)}</code>
        </div>
        <div className="small" data-testid="permission-rule">
          {d.rule_id ? (
            <>
              by rule <code>{props.rule ? ruleText(props.rule) : d.rule_id.slice(0, 8)}</code>
              {props.rule?.project_id === null && <span className="muted"> (global)</span>}
            </>
          ) : (
            <span className="muted">{d.decision_source === 'auto_default' ? 'no rule matched: the default' : d.decision_source}</span>
          )}
          {denied && d.command_reading?.matched && (
            <span className="muted">
              {' '}
              · matched <code>{d.command_reading.matched}</code>
            </span>
          )}
        </div>
        {d.reason && <div className="small muted break">{d.reason}</div>}
        {d.command_reading?.not_analyzable && <div className="small tool-error">Not analyzable: {d.command_reading.not_analyzable}</div>}
        <div className="small muted stack-facts">
          <span>{d.decision_point}</span>
          {d.agent && <span>{d.agent}</span>}
          {d.project_id && (
            <Link to={`/projects/${d.project_id}`} className="muted-link">
              {props.projectName ?? 'project'}
            </Link>
          )}
          {d.session_id && (
            <Link to={`/sessions/${d.session_id}`} className="muted-link">
              session {d.session_id.slice(0, 8)}
            </Link>
          )}
        </div>
        <details className="run-raw">
          <summary>Input</summary>
          <pre>{inputPretty(d.tool_input)}</pre>
        </details>
      </div>
      <time className="log-when" dateTime={d.decided_at} title={new Date(d.decided_at).toLocaleString()}>
        {ago(d.decided_at)}
      </time>
    </li>
  );
}
