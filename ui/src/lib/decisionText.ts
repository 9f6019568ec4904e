// How a decision reads: the rule that made it, by its text (`Bash rm:*`) rather than its id.
import type { Decision, Rule } from '../api/client';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/** `Bash rm:*`, or `Bash (any input)`. */
export function ruleText(rule: Pick<Rule, 'tool_name' | 'rule_content'>): string {
  return `${rule.tool_name} ${rule.rule_content.trim() || '(any input)'}`;
}

/**
 * The line under a decision. With its rule in hand: `denied by global rule Bash rm:*`. Without
 * (a list not loaded, a rule deleted since): the service's reason with the rule's id replaced
 * by the text the reason quotes (`... rule <id> (Bash "rm:*")`), or the id when it quotes none.
 */
export function decisionText(d: Decision, rule: Rule | undefined): string {
  const verb = d.decision === 'deny' ? 'denied' : 'allowed';
  if (d.rule_id && rule) return `${verb} by ${rule.project_id ? 'project' : 'global'} rule ${ruleText(rule)}`;
  const reason = d.reason ?? d.decision_source;
  if (!d.rule_id) return reason;
  const quoted = reason.match(new RegExp(`rule ${UUID.source} \\(([^)]*)\\)`, 'i'));
  if (quoted) return reason.replace(quoted[0], `rule ${quoted[1]}`);
  return reason.includes(d.rule_id) ? reason : `${reason} (rule ${d.rule_id})`;
}
