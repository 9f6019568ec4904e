// Decisions name their rule by id; the log shows the rule itself. The rules come from the same
// cached lists the rule editors use (global, and each project's), read only when a row needs one.
import { useQueries, useQuery } from '@tanstack/react-query';
import { api, type Decision, type Rule } from '../api/client';
import { keys } from '../query/client';

export function useRuleLookup(decisions: Decision[]): Map<string, Rule> {
  const withRule = decisions.filter((d) => d.rule_id);
  const global = useQuery({ queryKey: keys.globalRules, queryFn: api.globalRules, enabled: withRule.length > 0 });
  const projectIds = [...new Set(withRule.map((d) => d.project_id).filter((id): id is string => !!id))];
  const perProject = useQueries({
    queries: projectIds.map((id) => ({ queryKey: keys.projectRules(id), queryFn: () => api.projectRules(id), retry: false })),
  });
  const rules = new Map<string, Rule>();
  for (const r of global.data ?? []) rules.set(r.id, r);
  for (const q of perProject) for (const r of q.data ?? []) rules.set(r.id, r);
  return rules;
}
