import { turnWaitingOf } from './turnWaiting';

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
