// A session's turn waiting for its project's work-in-progress limit (`max_running_turns`): the
// `session.turn_waiting` event says where it stands in the project's line, and so does the line
// itself (`GET /api/projects/{id}/turns`), which a page opened after the event can read.
import type { TurnQueue } from '../api/client';
import type { Frame } from './sse';

/** The data of `session.turn_waiting`: a session's turn waits for its project's limit. */
export interface TurnWaitingEvent {
  session_id: string;
  project_id?: string;
  /** 1: next to start. */
  position: number;
  queued_turns?: number;
}

/** A `session.turn_waiting` frame's data, with its session (from the data, else from the frame). */
export function turnWaitingOf(frame: Frame): TurnWaitingEvent | null {
  if (frame.type !== 'session.turn_waiting') return null;
  const data = frame.data;
  if (typeof data !== 'object' || data === null) return null;
  const d = data as Partial<TurnWaitingEvent>;
  const sessionId = typeof d.session_id === 'string' ? d.session_id : frame.session_id;
  if (!sessionId || typeof d.position !== 'number') return null;
  return { ...d, session_id: sessionId, position: d.position };
}

/** What was heard or read, and when (`dataUpdatedAt` of its query). */
export interface Seen<T> {
  value: T | null | undefined;
  at: number;
}

/**
 * The session's position in its project's line of turns, or `null` when it is not waiting.
 * The line read after the last event says it (the event may be of a wait that ended since, and
 * the line has the places moved up since); an event heard after the last read says it until the
 * line is read again (the read may have come before the turn waited).
 */
export function waitingPosition(sessionId: string, event: Seen<TurnWaitingEvent>, line: Seen<TurnQueue>): number | null {
  const heard = event.value?.session_id === sessionId ? event.value : null;
  if (line.value && (!heard || line.at > event.at)) {
    return line.value.waiting.find((slot) => slot.session_id === sessionId)?.position ?? null;
  }
  return heard?.position ?? null;
}
