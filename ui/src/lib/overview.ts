// Projects and sessions: what the sidebar, the top bar and the dashboard show. Read once per
// page load (projects, live sessions, then each project's sessions for the cost figures) and
// kept current by the live stream: nothing is fetched again per event.
import { useQueries, useQuery } from '@tanstack/react-query';
import type { Project, Session } from '../api/client';
import { activeSessionsQuery, projectSessionsQuery, projectsQuery } from '../query/queries';
import { sortByName } from './naturalSort';

export interface Overview {
  /** In natural order by name. */
  projects: Project[];
  /** Sessions whose CLI runs now. */
  live: Session[];
  /** Every session of every project (for the cost figures); complete once `historyLoading` is false. */
  sessions: Session[];
  loading: boolean;
  historyLoading: boolean;
  error: string | undefined;
}

const message = (e: unknown) => (e instanceof Error ? e.message : e ? String(e) : undefined);

/**
 * `history`: also read every project's sessions (the costs and turns). The sidebar needs only
 * the live ones; the top bar's total and the dashboard need all.
 */
export function useOverview({ history = true }: { history?: boolean } = {}): Overview {
  const projects = useQuery({ ...projectsQuery(), select: sortByName });
  const live = useQuery(activeSessionsQuery());
  const lists = useQueries({
    queries: (history ? (projects.data ?? []) : []).map((p) => projectSessionsQuery(p.id)),
    combine: combineLists,
  });
  return {
    projects: projects.data ?? [],
    live: live.data ?? [],
    sessions: lists.sessions,
    loading: projects.isPending || live.isPending,
    historyLoading: projects.isPending || lists.pending,
    error: message(projects.error ?? live.error ?? lists.error),
  };
}

function combineLists(results: { data?: Session[]; isPending: boolean; error: Error | null }[]) {
  return {
    sessions: results.flatMap((r) => r.data ?? []),
    pending: results.some((r) => r.isPending),
    error: results.find((r) => r.error)?.error,
  };
}

/** Live sessions per project id. */
export function liveCounts(live: Session[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const s of live) counts.set(s.project_id, (counts.get(s.project_id) ?? 0) + 1);
  return counts;
}
