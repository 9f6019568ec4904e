// Every rule the service has, global and per project, from the query cache. The lists are
// loaded once and then kept current by `rule.*` frames (see toolFrames.ts); a change made
// here is also written into the cache from the API's answer at once, so the page does not
// wait for the frame (which then changes nothing: the same row is put again).
import { useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, type CreateRule, type Project, type Rule, type UpdateRule } from '../api/client';
import { tools } from '../api/tools';
import { keys } from './client';
import { dropRule, putRule, useToolFrames } from './toolFrames';

export interface RuleRow {
  rule: Rule;
  /** The project's name, or null for a global rule. */
  projectName: string | null;
}

export interface AllRules {
  projects: Project[];
  rows: RuleRow[];
  loading: boolean;
  /** The first load that failed, as the API said it. */
  error: string | undefined;
}

export function useProjects() {
  return useQuery({ queryKey: keys.projects, queryFn: api.projects });
}

export function useAllRules(): AllRules {
  useToolFrames();
  const projects = useProjects();
  const global = useQuery({ queryKey: keys.globalRules, queryFn: tools.globalRules });
  const list = projects.data ?? [];
  const perProject = useQueries({
    queries: list.map((p) => ({ queryKey: keys.projectRules(p.id), queryFn: () => tools.projectRules(p.id) })),
  });
  const rows: RuleRow[] = [
    ...(global.data ?? []).map((rule) => ({ rule, projectName: null })),
    ...perProject.flatMap((q, i) => (q.data ?? []).map((rule) => ({ rule, projectName: list[i]?.name ?? '?' }))),
  ];
  const failed = [projects, global, ...perProject].find((q) => q.error);
  return {
    projects: list,
    rows,
    loading: projects.isPending || global.isPending || perProject.some((q) => q.isPending),
    error: failed?.error ? (failed.error as Error).message : undefined,
  };
}

/** Create, change and delete, each answered into the cache. Errors are thrown for the form to show. */
export function useRuleActions() {
  const client = useQueryClient();
  return {
    create: async (projectId: string | null, body: CreateRule) => {
      const rule = await (projectId ? api.createProjectRule(projectId, body) : api.createGlobalRule(body));
      putRule(client, rule);
      return rule;
    },
    update: async (ruleId: string, body: UpdateRule) => {
      const rule = await api.updateRule(ruleId, body);
      putRule(client, rule);
      return rule;
    },
    remove: async (ruleId: string) => {
      await api.deleteRule(ruleId);
      dropRule(client, ruleId);
    },
  };
}
