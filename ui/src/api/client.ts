// The typed API client. Paths, bodies, queries and answers are all taken from
// `ui/generated/schema.d.ts`, which `npm run build` generates from `ui/openapi.json`, the
// committed copy of the service's OpenAPI document (a Rust test fails when it differs from the
// live one). A server change that the UI does not follow therefore fails the type check
// instead of failing at run time.
import type { components, paths } from '../../generated/schema';

export type Schemas = components['schemas'];
export type Project = Schemas['Project'];
export type Session = Schemas['Session'];
export type Message = Schemas['Message'];
export type Rule = Schemas['Rule'];
export type Decision = Schemas['Decision'];
export type Health = Schemas['Health'];
export type FolderListing = Schemas['FolderListing'];
export type DiscoveredProject = Schemas['DiscoveredProject'];
export type PermissionMode = Schemas['PermissionMode'];
export type CreateProject = Schemas['CreateProject'];
export type UpdateProject = Schemas['UpdateProject'];
export type CreateRule = Schemas['CreateRule'];
export type UpdateRule = Schemas['UpdateRule'];
export type LaunchSession = Schemas['LaunchSession'];
export type UsageReport = Schemas['UsageReport'];
export type UsageGroup = Schemas['UsageGroup'];
export type Figures = Schemas['Figures'];
export type LimitView = Schemas['LimitView'];
export type TurnQueue = Schemas['TurnQueue'];
export type TurnSlot = Schemas['TurnSlot'];

type Method = 'get' | 'post' | 'put' | 'delete';
type Op<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type JsonOf<R> = R extends { content: { 'application/json': infer T } } ? T : void;
type Answer<O> = O extends { responses: infer Rs }
  ? Rs extends { 200: infer R } ? JsonOf<R>
    : Rs extends { 201: infer R } ? JsonOf<R>
    : Rs extends { 202: infer R } ? JsonOf<R>
    : void
  : never;
type BodyOf<O> = O extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? Q : never;

export interface CallOptions<O> {
  /** Values for `{name}` segments of the path. */
  params?: Record<string, string>;
  query?: QueryOf<O>;
  body?: BodyOf<O>;
}

/** An answer other than 2xx, with the service's `{"error":{"code","message"}}` body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The whole error body, for answers that say more (a merge conflict's `files`). */
    readonly body?: unknown,
    /** `Retry-After`, in seconds (a spent budget's 402 says when it resets). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

export async function call<P extends keyof paths, M extends Method>(
  method: M,
  path: P,
  options: CallOptions<Op<P, M>> = {},
): Promise<Answer<Op<P, M>>> {
  let url = String(path).replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = options.params?.[name];
    if (value === undefined) throw new Error(`missing path parameter ${name} for ${String(path)}`);
    return encodeURIComponent(value);
  });
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries((options.query ?? {}) as Record<string, unknown>)) {
    if (v !== undefined && v !== null && v !== '') query.set(k, String(v));
  }
  if ([...query].length > 0) url += `?${query}`;
  const headers: Record<string, string> = authHeaders();
  const init: RequestInit = { method: method.toUpperCase(), headers };
  if (options.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  }
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch {
    throw new ApiError(0, 'unreachable', 'The Conduit service cannot be reached. Is it running?');
  }
  // A 401 anywhere but the sign-in form itself means this tab is no longer signed in (the
  // cookie expired or was revoked, the token is wrong): the auth gate shows the login page.
  // The form's own 401 is a wrong password and stays with the form.
  if (res.status === 401 && path !== '/api/auth/login') reportUnauthorized();
  if (res.status === 204) return undefined as Answer<Op<P, M>>;
  const text = await res.text();
  const parsed: unknown = text ? safeJson(text) : undefined;
  if (!res.ok) {
    const err = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    const message = err?.message ?? `The service answered ${res.status}.`;
    throw new ApiError(res.status, err?.code ?? 'http_error', message, parsed, retryAfterSeconds(res.headers.get('Retry-After')));
  }
  return parsed as Answer<Op<P, M>>;
}

const unauthorizedListeners = new Set<() => void>();

/** Hears every 401 (but the sign-in form's); returns the function that stops listening. */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => {
    unauthorizedListeners.delete(listener);
  };
}

/** Says the service refused this tab's credential (the live stream reports its 401 here too). */
export function reportUnauthorized(): void {
  for (const listener of unauthorizedListeners) listener();
}

/** A `Retry-After` value in seconds: it holds seconds, or an HTTP date. */
export function retryAfterSeconds(value: string | null, now: number = Date.now()): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const TOKEN_KEY = 'conduit-token';

/**
 * With `CONDUIT_AUTH_TOKEN` set, the dashboard is opened once as `/?token=...`: the token is kept
 * for the tab and taken out of the address bar (so it is not bookmarked or shared by accident).
 */
export function adoptTokenFromUrl(): void {
  const url = new URL(window.location.href);
  const token = url.searchParams.get('token');
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  url.searchParams.delete('token');
  window.history.replaceState(null, '', url.pathname + url.search + url.hash);
}

export function authHeaders(): Record<string, string> {
  const token = typeof sessionStorage === 'undefined' ? null : sessionStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: `Bearer ${token}` } : {};
}

const id = (value: string) => ({ id: value });

/** One function per endpoint the dashboard uses. */
export const api = {
  health: () => call('get', '/api/health'),
  projects: () => call('get', '/api/projects', { query: { limit: 1000 } }),
  project: (projectId: string) => call('get', '/api/projects/{id}', { params: id(projectId) }),
  createProject: (body: CreateProject) => call('post', '/api/projects', { body }),
  importProject: (body: Schemas['ImportProject']) => call('post', '/api/projects/import', { body }),
  updateProject: (projectId: string, body: UpdateProject) =>
    call('put', '/api/projects/{id}', { params: id(projectId), body }),
  deleteProject: (projectId: string) => call('delete', '/api/projects/{id}', { params: id(projectId) }),
  discover: (path: string) => call('get', '/api/projects/discover', { query: { path } }),
  browse: (path?: string) => call('get', '/api/folders/browse', { query: { path } }),
  projectSessions: (projectId: string) =>
    call('get', '/api/projects/{id}/sessions', { params: id(projectId), query: { limit: 1000 } }),
  activeSessions: () => call('get', '/api/sessions/active', { query: { limit: 1000 } }),
  session: (sessionId: string) => call('get', '/api/sessions/{id}', { params: id(sessionId) }),
  messages: (sessionId: string) =>
    call('get', '/api/sessions/{id}/messages', { params: id(sessionId), query: { limit: 1000 } }),
  launch: (projectId: string, body: LaunchSession) =>
    call('post', '/api/projects/{id}/sessions', { params: id(projectId), body }),
  send: (sessionId: string, content: string) =>
    call('post', '/api/sessions/{id}/message', { params: id(sessionId), body: { content } }),
  interrupt: (sessionId: string) => call('post', '/api/sessions/{id}/interrupt', { params: id(sessionId) }),
  pause: (sessionId: string) => call('post', '/api/sessions/{id}/pause', { params: id(sessionId) }),
  unpause: (sessionId: string) => call('post', '/api/sessions/{id}/unpause', { params: id(sessionId) }),
  setModel: (sessionId: string, model: string) =>
    call('post', '/api/sessions/{id}/model', { params: id(sessionId), body: { model } }),
  setMode: (sessionId: string, mode: PermissionMode) =>
    call('post', '/api/sessions/{id}/permission-mode', { params: id(sessionId), body: { mode } }),
  kill: (sessionId: string) => call('delete', '/api/sessions/{id}', { params: id(sessionId) }),
  projectRules: (projectId: string) => call('get', '/api/projects/{id}/rules', { params: id(projectId) }),
  createProjectRule: (projectId: string, body: CreateRule) =>
    call('post', '/api/projects/{id}/rules', { params: id(projectId), body }),
  globalRules: () => call('get', '/api/rules/global'),
  createGlobalRule: (body: CreateRule) => call('post', '/api/rules/global', { body }),
  updateRule: (ruleId: string, body: UpdateRule) => call('put', '/api/rules/{id}', { params: id(ruleId), body }),
  deleteRule: (ruleId: string) => call('delete', '/api/rules/{id}', { params: id(ruleId) }),
  decisions: (query: { session_id?: string; project_id?: string; decision?: string; limit?: number }) =>
    call('get', '/api/permissions/log', { query }),
  /** The cost ledger summed (`group_by`: project, session, agent, agent_kind, model or day). */
  usage: (query: UsageQuery) => call('get', '/api/usage', { query }),
  /** Each agent CLI's latest usage-limit state (`allowed`, `warning` or `limited`). */
  usageLimits: () => call('get', '/api/usage/limits'),
};

export interface UsageQuery {
  group_by?: 'project' | 'session' | 'agent' | 'agent_kind' | 'model' | 'day';
  /** Inclusive; RFC 3339 or `YYYY-MM-DD` (midnight UTC). Absent: all time. */
  from?: string;
  /** Exclusive. Absent: the end of the current hour. */
  to?: string;
  project_id?: string;
}
