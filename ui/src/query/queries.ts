// The queries of the shell and its pages, one place for each key's query function. Lists are
// read whole (page after page), since the figures computed from them must be complete, and
// every answer gets the frames that arrived during its request replayed over it.
import { queryOptions } from '@tanstack/react-query';
import { api, call, type TurnQueue, type Decision, type LimitView, type Project, type Rule, type Session, type UsageQuery, type UsageReport } from '../api/client';
import { liveFetch } from '../store/cacheSync';
import { keys } from './client';

const PAGE = 1000;

/** Every row of a paginated list: pages of `PAGE` until a short one. */
export async function readAll<T>(page: (limit: number, offset: number) => Promise<T[]>): Promise<T[]> {
  const rows: T[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const got = await page(PAGE, offset);
    rows.push(...got);
    if (got.length < PAGE) return rows;
  }
}

export const projectsQuery = () =>
  queryOptions<Project[]>({
    queryKey: keys.projects,
    queryFn: liveFetch(keys.projects, () => readAll((limit, offset) => call('get', '/api/projects', { query: { limit, offset } }))),
  });

export const projectQuery = (id: string) =>
  queryOptions<Project>({ queryKey: keys.project(id), queryFn: liveFetch(keys.project(id), () => api.project(id)) });

export const activeSessionsQuery = () =>
  queryOptions<Session[]>({
    queryKey: keys.activeSessions,
    queryFn: liveFetch(keys.activeSessions, () =>
      readAll((limit, offset) => call('get', '/api/sessions/active', { query: { limit, offset } })),
    ),
  });

export const projectSessionsQuery = (id: string) =>
  queryOptions<Session[]>({
    queryKey: keys.projectSessions(id),
    queryFn: liveFetch(keys.projectSessions(id), () =>
      readAll((limit, offset) =>
        call('get', '/api/projects/{id}/sessions', { params: { id }, query: { limit, offset } }),
      ),
    ),
  });

/** A project's rules, or the global ones. All of them: a page of 100 cut off allow rules (listed last). */
export const rulesQuery = (projectId?: string) => {
  const key = projectId ? keys.projectRules(projectId) : keys.globalRules;
  return queryOptions<Rule[]>({
    queryKey: key,
    queryFn: liveFetch(key, () =>
      readAll((limit, offset) =>
        projectId
          ? call('get', '/api/projects/{id}/rules', { params: { id: projectId }, query: { limit, offset } })
          : call('get', '/api/rules/global', { query: { limit, offset } }),
      ),
    ),
  });
};

export interface DecisionFilter {
  session_id?: string;
  project_id?: string;
  decision?: 'allow' | 'deny';
  limit?: number;
}

export const decisionsQuery = (filter: DecisionFilter) =>
  queryOptions<Decision[]>({
    queryKey: keys.decisions({ ...filter }),
    queryFn: liveFetch(keys.decisions({ ...filter }), () => api.decisions(filter)),
  });

/**
 * The cost ledger summed (all time unless `from`/`to` say otherwise). No event carries the
 * sums: store/usageRefresh.ts has these read again when the stream says a cost was stored.
 */
export const usageQuery = (query: UsageQuery = {}) =>
  queryOptions<UsageReport>({ queryKey: keys.usage(query), queryFn: liveFetch(keys.usage(query), () => api.usage(query)) });

/**
 * The agent CLIs' usage limits. `usage.limit_*` frames have it read again (store/usageRefresh.ts),
 * but a CLI's warnings and a reset that passed come with no event: read once a minute while shown.
 */
export const usageLimitsQuery = () =>
  queryOptions<LimitView[]>({
    queryKey: keys.usageLimits,
    queryFn: liveFetch(keys.usageLimits, () => api.usageLimits()),
    refetchInterval: 60_000,
  });

/**
 * A project's turns running and waiting for its limit (its page's card, a session page's notice
 * of a turn waiting). No event carries the line: store/usageRefresh.ts has it read again when a
 * session's status changes or a turn waits.
 */
export const projectTurnsQuery = (projectId: string) =>
  queryOptions<TurnQueue>({
    queryKey: keys.projectTurns(projectId),
    queryFn: liveFetch(keys.projectTurns(projectId), () => call('get', '/api/projects/{id}/turns', { params: { id: projectId } })),
  });

/** Health has no events: read on first use, on reconnect, and once a minute while shown. */
export const healthQuery = () =>
  queryOptions({ queryKey: keys.health, queryFn: () => api.health(), refetchInterval: 60_000 });

/** Folder listings and discovery change behind the service's back: read afresh each time. */
export const browseQuery = (path: string | undefined) =>
  queryOptions({ queryKey: keys.browse(path ?? ''), queryFn: () => api.browse(path), staleTime: 0, gcTime: 0 });

export const discoverQuery = (path: string) =>
  queryOptions({ queryKey: keys.discover(path), queryFn: () => api.discover(path), staleTime: 0, gcTime: 0 });
