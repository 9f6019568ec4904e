// The session page's endpoints that `api` in client.ts does not have yet: the transcript read in
// pages from its end, the CLI's models and modes, resume and fork. Typed from the same schema.
import { call, type Schemas, type Session } from './client';

export type SessionOptions = Schemas['Offers'];
export type ModelOption = Schemas['ModelChoice'];

/** Lines per transcript page: enough to fill a screen, small enough to load at once. */
export const PAGE_SIZE = 200;

const id = (value: string) => ({ id: value });

export const sessionApi = {
  /** The last `limit` lines, oldest first. */
  tail: (sessionId: string, limit = PAGE_SIZE) =>
    call('get', '/api/sessions/{id}/messages', { params: id(sessionId), query: { tail: true, limit, partial: false } }),
  /** The `limit` lines before message `before`, oldest first. */
  before: (sessionId: string, before: number, limit = PAGE_SIZE) =>
    call('get', '/api/sessions/{id}/messages', { params: id(sessionId), query: { before, limit, partial: false } }),
  options: (sessionId: string) => call('get', '/api/sessions/{id}/options', { params: id(sessionId) }),
  resume: (sessionId: string) => call('post', '/api/sessions/{id}/resume', { params: id(sessionId) }),
  /** A new session that continues this one's conversation under a new CLI session id. */
  fork: (session: Session) =>
    call('post', '/api/projects/{id}/sessions', {
      params: id(session.project_id),
      body: { resume_session_id: session.session_id ?? null, fork_session: true, agent: session.agent },
    }),
};
