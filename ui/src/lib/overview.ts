// Projects and the sessions of every project: what the sidebar, header and dashboard show.
import { api, type Project, type Session } from '../api/client';
import { useLive } from '../store/live';
import { useLoad } from './useLoad';

export interface Overview {
  projects: Project[];
  sessions: Session[];
}

export async function loadOverview(): Promise<Overview> {
  const projects = await api.projects();
  const lists = await Promise.all(projects.map((p) => api.projectSessions(p.id)));
  return { projects, sessions: lists.flat() };
}

export function useOverview() {
  const sessions = useLive((s) => s.sessions);
  const config = useLive((s) => s.config);
  return useLoad(loadOverview, [sessions, config]);
}
