// Calls for the tool pages (rules, locks, processes, review, terminals). Kept apart from
// `client.ts` so those pages do not compete with the rest of the dashboard for one file; every
// call still goes through the typed `call`, so a server change fails the type check here.
import type { paths } from '../../generated/schema';
import { authHeaders, call, type Rule, type Schemas } from './client';

export type ProcessRow = Schemas['ProcessRow'];
export type LockState = Schemas['LockState'];
export type SessionDiff = Schemas['SessionDiff'];
export type FileChange = Schemas['FileChange'];
export type Committed = Schemas['Committed'];
export type MergeResult = Schemas['MergeResult'];
export type MergeStrategy = Schemas['MergeStrategy'];
export type TerminalView = Schemas['TerminalView'];
export type LogPage = Schemas['LogPage'];
export type LogStream = Schemas['Stream'];
export type CommandSpec = Schemas['CommandSpec'];

/** Where processes run: a project's own folder, or a session's workspace. */
export type ProcessScope = 'projects' | 'sessions';

/** The most a list asks for (the API's ceiling). */
const ALL = 1000;

const one = (value: string) => ({ id: value });
const of = (ownerId: string, processId: string) => ({ id: ownerId, process_id: processId });

export const tools = {
  globalRules: (): Promise<Rule[]> => call('get', '/api/rules/global', { query: { limit: ALL } }),
  projectRules: (projectId: string): Promise<Rule[]> =>
    call('get', '/api/projects/{id}/rules', { params: one(projectId), query: { limit: ALL } }),

  locks: () => call('get', '/api/locks'),

  processes: (scope: ProcessScope, ownerId: string) =>
    scope === 'projects'
      ? call('get', '/api/projects/{id}/processes', { params: one(ownerId), query: { limit: ALL } })
      : call('get', '/api/sessions/{id}/processes', { params: one(ownerId), query: { limit: ALL } }),
  startProcess: (scope: ProcessScope, ownerId: string, body: CommandSpec) =>
    scope === 'projects'
      ? call('post', '/api/projects/{id}/processes', { params: one(ownerId), body })
      : call('post', '/api/sessions/{id}/processes', { params: one(ownerId), body }),
  killProcess: (scope: ProcessScope, ownerId: string, processId: string) =>
    scope === 'projects'
      ? call('post', '/api/projects/{id}/processes/{process_id}/kill', { params: of(ownerId, processId), body: {} })
      : call('post', '/api/sessions/{id}/processes/{process_id}/kill', { params: of(ownerId, processId), body: {} }),
  killAllProcesses: (scope: ProcessScope, ownerId: string) =>
    scope === 'projects'
      ? call('post', '/api/projects/{id}/processes/kill-all', { params: one(ownerId), body: {} })
      : call('post', '/api/sessions/{id}/processes/kill-all', { params: one(ownerId), body: {} }),
  cleanupProcesses: (scope: ProcessScope, ownerId: string) =>
    scope === 'projects'
      ? call('post', '/api/projects/{id}/processes/cleanup', { params: one(ownerId) })
      : call('post', '/api/sessions/{id}/processes/cleanup', { params: one(ownerId) }),
  processLog: (scope: ProcessScope, ownerId: string, processId: string, stream: LogStream, offset: number, limit: number) =>
    scope === 'projects'
      ? call('get', '/api/projects/{id}/processes/{process_id}/logs', {
          params: of(ownerId, processId),
          query: { stream, offset, limit },
        })
      : call('get', '/api/sessions/{id}/processes/{process_id}/logs', {
          params: of(ownerId, processId),
          query: { stream, offset, limit },
        }),

  diff: (sessionId: string, offset: number, limit: number) =>
    call('get', '/api/sessions/{id}/diff', { params: one(sessionId), query: { offset, limit } }),
  commit: (sessionId: string, message: string) =>
    call('post', '/api/sessions/{id}/commit', { params: one(sessionId), body: { message } }),
  merge: (sessionId: string, strategy: MergeStrategy) =>
    call('post', '/api/sessions/{id}/merge', { params: one(sessionId), body: { strategy } }),

  sessionTerminals: (sessionId: string) => call('get', '/api/terminals', { query: { session_id: sessionId } }),
  startTerminal: (sessionId: string, cols: number, rows: number) =>
    call('post', '/api/sessions/{id}/terminals', { params: one(sessionId), body: { cols, rows } }),
  endTerminal: (terminalId: string) => call('delete', '/api/terminals/{id}', { params: one(terminalId) }),
};

/**
 * Fills a path's `{name}` segments (for the streaming endpoints `call` cannot read: SSE and
 * WebSocket). Taking `keyof paths` keeps those URLs tied to the OpenAPI document too.
 */
export function pathOf(path: keyof paths, params: Record<string, string>): string {
  return String(path).replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`missing path parameter ${name} for ${String(path)}`);
    return encodeURIComponent(value);
  });
}

/** The log of a background process as SSE (`stdout`/`stderr` events, then `exit`). */
export function processLogStreamUrl(scope: ProcessScope, ownerId: string, processId: string, stream: LogStream, offset: number) {
  const path =
    scope === 'projects'
      ? pathOf('/api/projects/{id}/processes/{process_id}/logs/stream', of(ownerId, processId))
      : pathOf('/api/sessions/{id}/processes/{process_id}/logs/stream', of(ownerId, processId));
  return `${path}?stream=${stream}&offset=${offset}`;
}

/** The API token, if the tab has one: browsers cannot give a WebSocket headers, so it goes in `?token=`. */
export function tokenForUrl(): string | null {
  const header = authHeaders().Authorization;
  return header ? header.replace(/^Bearer /, '') : null;
}

/** The WebSocket address of a terminal, on this page's host (ws: or wss: to match). */
export function terminalSocketUrl(terminalId: string, location: Pick<Location, 'protocol' | 'host'> = window.location) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const token = tokenForUrl();
  const query = token ? `?token=${encodeURIComponent(token)}` : '';
  return `${scheme}//${location.host}${pathOf('/api/terminals/{id}/ws', one(terminalId))}${query}`;
}
