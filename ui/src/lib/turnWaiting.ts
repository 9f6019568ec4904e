// A session's turn waiting for its project's work-in-progress limit (`max_running_turns`): the
// `session.turn_waiting` event says where it stands in the project's line.
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
