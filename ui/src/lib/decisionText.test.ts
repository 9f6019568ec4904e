import type { Decision, Rule } from '../api/client';
import { decisionText } from './decisionText';

const id = '0b6f5c3e-1d2a-4c8b-9e7f-123456789abc';
const decision = (over: Partial<Decision>): Decision => ({
  id: 1, request_id: 'r', decision_point: 'hook', tool_name: 'Bash', tool_input: '{"command":"rm x"}', decision: 'deny',
  decision_source: 'auto_rule', decided_at: '', rule_id: id, reason: `denied by Conduit global rule ${id} (Bash "rm:*")`, ...over,
});
const rule: Rule = { id, tool_name: 'Bash', rule_content: 'rm:*', behavior: 'deny', priority: 0, project_id: null, created_at: '', updated_at: '' };

describe('a decision in words', () => {
  it('names its rule by the rule text, not its id', () => {
    expect(decisionText(decision({}), rule)).toBe('denied by global rule Bash rm:*');
    expect(decisionText(decision({ decision: 'allow' }), { ...rule, project_id: 'p', rule_content: '' })).toBe(
      'allowed by project rule Bash (any input)',
    );
  });

  it('without the rule at hand, takes the text the reason quotes, else keeps the id', () => {
    expect(decisionText(decision({}), undefined)).toBe('denied by Conduit global rule Bash "rm:*"');
    expect(decisionText(decision({ reason: 'denied' }), undefined)).toBe(`denied (rule ${id})`);
    expect(decisionText(decision({ rule_id: null, reason: 'allowed: no Conduit rule matched' }), undefined)).toBe(
      'allowed: no Conduit rule matched',
    );
  });
});
