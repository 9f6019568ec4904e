// Every rule the cache holds, by id: how the decisions lists name a rule without a request.
import { useMemo, useSyncExternalStore } from 'react';
import type { QueryClient, QueryKey } from '@tanstack/react-query';
import type { Rule } from '../api/client';
import { queryClient } from './client';

export const isRulesKey = (key: QueryKey) =>
  (key[0] === 'rules' && key[1] === 'global') || (key[0] === 'projects' && key.length === 3 && key[2] === 'rules');

export function cachedRules(client: QueryClient = queryClient): Map<string, Rule> {
  const byId = new Map<string, Rule>();
  for (const [, rules] of client.getQueriesData<Rule[]>({ predicate: (q) => isRulesKey(q.queryKey) })) {
    if (Array.isArray(rules)) for (const r of rules) byId.set(r.id, r);
  }
  return byId;
}

let version = 0;

function subscribe(onChange: () => void): () => void {
  return queryClient.getQueryCache().subscribe((event) => {
    if (event.type === 'updated' && event.action.type === 'success' && isRulesKey(event.query.queryKey)) {
      version += 1;
      onChange();
    }
  });
}

/** The cached rules by id; redraws when a rules list changes. */
export function useCachedRules(): Map<string, Rule> {
  const seen = useSyncExternalStore(subscribe, () => version);
  return useMemo(() => cachedRules(), [seen]);
}
