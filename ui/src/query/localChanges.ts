// What this tab changed itself, put in the cache at once from the API's answer: the same
// patches the event of that change will apply again (harmlessly) when it arrives.
import type { Project, Rule, Session } from '../api/client';
import { applyFrameToCache } from '../store/cacheSync';
import { queryClient } from './client';

function local(type: string, data: unknown): void {
  applyFrameToCache(queryClient, { event: 'local', type, session_id: null, data });
}

export const changed = {
  project: (row: Project, created = false) => local(created ? 'project.created' : 'project.updated', row),
  projectDeleted: (id: string) => local('project.deleted', { id }),
  rule: (row: Rule, created = false) => local(created ? 'rule.created' : 'rule.updated', row),
  ruleDeleted: (id: string) => local('rule.deleted', { id }),
  session: (row: Session) => local('session.status', row),
};
