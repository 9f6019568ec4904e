import { turnWaitingOf, waitingPosition } from './turnWaiting';

describe('session.turn_waiting frames', () => {
  it('give the session and its position, from the data or else the frame', () => {
    expect(turnWaitingOf({ event: 'turn_waiting', type: 'session.turn_waiting', data: { session_id: 's1', project_id: 'p1', position: 2, queued_turns: 1 } })).toEqual({
      session_id: 's1', project_id: 'p1', position: 2, queued_turns: 1,
    });
    expect(turnWaitingOf({ event: 'turn_waiting', type: 'session.turn_waiting', session_id: 's2', data: { position: 1 } })).toMatchObject({ session_id: 's2', position: 1 });
    expect(turnWaitingOf({ event: 'session_status', type: 'session.status', data: { session_id: 's1', position: 1 } })).toBeNull();
    expect(turnWaitingOf({ event: 'turn_waiting', type: 'session.turn_waiting', data: { session_id: 's1' } })).toBeNull();
  });
});

describe("a session's place in its project's line", () => {
  const slot = (session_id: string, position: number) => ({ session_id, position, since: '2026-01-01T00:00:00Z' });
  const line = (...waiting: ReturnType<typeof slot>[]) => ({ max_running_turns: 1, running: [slot('r', 1)], waiting });
  const event = (position: number, session_id = 's1') => ({ session_id, project_id: 'p1', position });

  it('comes from the line alone when no event was heard (a page opened after it)', () => {
    expect(waitingPosition('s1', { value: undefined, at: 0 }, { value: line(slot('s0', 1), slot('s1', 2)), at: 10 })).toBe(2);
    expect(waitingPosition('s1', { value: null, at: 5 }, { value: line(slot('s0', 1)), at: 10 })).toBeNull();
    expect(waitingPosition('s1', { value: undefined, at: 0 }, { value: undefined, at: 0 })).toBeNull();
  });

  it('comes from an event heard after the last read of the line, until the line is read again', () => {
    expect(waitingPosition('s1', { value: event(3), at: 20 }, { value: line(), at: 10 })).toBe(3);
    expect(waitingPosition('s1', { value: event(3), at: 20 }, { value: undefined, at: 0 })).toBe(3);
    // Read after the event: the line says it, moved up or no longer there.
    expect(waitingPosition('s1', { value: event(3), at: 20 }, { value: line(slot('s1', 1)), at: 30 })).toBe(1);
    expect(waitingPosition('s1', { value: event(3), at: 20 }, { value: line(), at: 30 })).toBeNull();
    // Another session's event says nothing of this one.
    expect(waitingPosition('s1', { value: event(1, 's2'), at: 20 }, { value: line(slot('s2', 1)), at: 10 })).toBeNull();
  });
});
