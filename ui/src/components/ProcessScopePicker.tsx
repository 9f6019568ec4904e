import { useQuery } from '@tanstack/react-query';
import { api } from '../api/client';
import { statusLabel } from '../lib/format';
import { keys } from '../query/client';
import { useProjects } from '../query/rules';

export interface ScopeChoice {
  projectId: string | null;
  sessionId: string | null;
}

/** Picks where processes are listed and started: a project's own folder, or one of its sessions. */
export function ProcessScopePicker(props: { value: ScopeChoice; onChange: (next: ScopeChoice) => void }) {
  const { sessionId } = props.value;
  const projects = useProjects();
  // Opened with only a session (a link from the session page): its project comes from the session.
  const session = useQuery({
    queryKey: keys.session(sessionId ?? ''),
    queryFn: () => api.session(sessionId ?? ''),
    enabled: Boolean(sessionId && !props.value.projectId),
  });
  const projectId = props.value.projectId ?? session.data?.project_id ?? null;
  const sessions = useQuery({
    queryKey: keys.projectSessions(projectId ?? ''),
    queryFn: () => api.projectSessions(projectId ?? ''),
    enabled: Boolean(projectId),
  });
  const sessionList = sessions.data ?? [];
  const knownSession = !sessionId || sessionList.some((s) => s.id === sessionId);
  return (
    <div className="scope-picker" role="group" aria-label="Where">
      <select
        aria-label="Project"
        value={projectId ?? ''}
        onChange={(e) => props.onChange({ projectId: e.target.value || null, sessionId: null })}
      >
        <option value="">Choose a project…</option>
        {(projects.data ?? []).map((p) => (
          <option key={p.id} value={p.id}>
            {p.name}
          </option>
        ))}
      </select>
      {projectId && (
        <select
          aria-label="Folder or session"
          value={sessionId ?? ''}
          onChange={(e) => props.onChange({ projectId, sessionId: e.target.value || null })}
        >
          <option value="">The project's folder</option>
          {!knownSession && sessionId && <option value={sessionId}>session {sessionId.slice(0, 8)}</option>}
          {sessionList.map((s) => (
            <option key={s.id} value={s.id}>
              session {s.name} ({statusLabel(s.status)})
            </option>
          ))}
        </select>
      )}
    </div>
  );
}
