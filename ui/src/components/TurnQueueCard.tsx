// A project's line of turns, on its page while it has a work-in-progress limit
// (`max_running_turns`): "Turns: 2 running of 2, 1 waiting", and the sessions waiting, first in
// line first. Read from `GET /api/projects/{id}/turns`, and again when a session's status changes
// or a turn starts waiting (store/usageRefresh.ts).
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router-dom';
import type { Project, Session } from '../api/client';
import { projectTurnsQuery } from '../query/queries';
import { Card, ErrorNote } from './ui';

export function TurnQueueCard({ project, sessions }: { project: Project; sessions: Session[] | undefined }) {
  const limit = project.max_running_turns ?? null;
  const turns = useQuery({ ...projectTurnsQuery(project.id), enabled: limit !== null });
  if (limit === null) return null;
  const queue = turns.data;
  const nameOf = (id: string) => sessions?.find((s) => s.id === id)?.name ?? id.slice(0, 8);
  const title = queue ? `Turns: ${queue.running.length} running of ${limit}, ${queue.waiting.length} waiting` : `Turns: at most ${limit} at once`;
  return (
    <Card title={title} testId="turn-queue" className="turn-queue">
      <ErrorNote error={turns.error?.message} what="read the project's turns" />
      {queue && queue.waiting.length === 0 && <p className="muted small">No session is waiting for a turn.</p>}
      {queue && queue.waiting.length > 0 && (
        <ol className="turn-waiting-list">
          {[...queue.waiting]
            .sort((a, b) => a.position - b.position)
            .map((slot) => (
              <li key={slot.session_id} data-testid="turn-waiting">
                <span className="muted">#{slot.position}</span> <Link to={`/sessions/${slot.session_id}`}>{nameOf(slot.session_id)}</Link>
              </li>
            ))}
        </ol>
      )}
    </Card>
  );
}
