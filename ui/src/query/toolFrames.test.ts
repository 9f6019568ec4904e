import { QueryClient } from '@tanstack/react-query';
import type { Rule } from '../api/client';
import { keys } from './client';
import { applyToolFrame } from './toolFrames';

const rule = (over: Partial<Rule>): Rule => ({
  id: 'r', tool_name: 'Bash', rule_content: '', behavior: 'deny', priority: 0, project_id: null,
  created_at: '2025-01-01T00:00:00Z', updated_at: '2025-01-01T00:00:00Z', ...over,
});

describe('rule frames in the cache', () => {
  it('keep each list in evaluation order and leave unloaded lists alone', () => {
    const client = new QueryClient();
    client.setQueryData(keys.globalRules, [rule({ id: 'a', behavior: 'allow' })]);
    applyToolFrame(client, { event: 'created', type: 'rule.created', data: rule({ id: 'b', priority: 1 }) });
    applyToolFrame(client, { event: 'created', type: 'rule.created', data: rule({ id: 'c', priority: 5 }) });
    expect(client.getQueryData<Rule[]>(keys.globalRules)?.map((r) => r.id)).toEqual(['c', 'b', 'a']);
    applyToolFrame(client, { event: 'created', type: 'rule.created', data: rule({ id: 'p', project_id: 'p9' }) });
    expect(client.getQueryData(keys.projectRules('p9'))).toBeUndefined();
  });

  it('are reloaded after a warning that frames were dropped', () => {
    const client = new QueryClient();
    client.setQueryData(keys.globalRules, []);
    client.setQueryData(keys.projectRules('p1'), []);
    client.setQueryData(keys.processes('projects', 'p1'), []);
    applyToolFrame(client, { event: 'warning', dropped: 3 });
    const stale = client.getQueryCache().getAll().filter((q) => q.state.isInvalidated).map((q) => q.queryKey);
    expect(stale).toHaveLength(3);
  });
});
