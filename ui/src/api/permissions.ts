// The permission log: every allow/deny decision, newest first, filtered and paged.
import { call, type Decision } from './client';

export interface DecisionFilter {
  decision?: 'allow' | 'deny';
  project_id?: string;
  session_id?: string;
}

/** Rows per page of the log ("load more" asks for the next one). */
export const LOG_PAGE = 50;

export const permissionsApi = {
  log: (filter: DecisionFilter, offset: number, limit = LOG_PAGE) =>
    call('get', '/api/permissions/log', { query: { ...filter, limit, offset } }),
};

/** True when a decision belongs in a log shown with `filter`. */
export function matchesFilter(d: Decision, filter: DecisionFilter): boolean {
  if (filter.decision && d.decision !== filter.decision) return false;
  if (filter.project_id && d.project_id !== filter.project_id) return false;
  if (filter.session_id && d.session_id !== filter.session_id) return false;
  return true;
}
