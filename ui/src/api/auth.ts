// Calls for signing in and out and for the user's own sign-ins (`/api/auth/*`). The sign-in
// lives in an HttpOnly cookie the browser sends by itself on same-origin fetch, EventSource and
// WebSocket requests: nothing here ever sees or stores its secret.
import { call, type Schemas } from './client';

export type Me = Schemas['Me'];
export type SignIn = Schemas['SignIn'];
export type LoginForm = Schemas['LoginForm'];

export const auth = {
  /** Who this tab is: 401 when it has no valid credential and the service wants one. */
  me: () => call('get', '/api/auth/me'),
  login: (body: LoginForm) => call('post', '/api/auth/login', { body }),
  logout: () => call('post', '/api/auth/logout'),
  signIns: () => call('get', '/api/auth/sessions', { query: { limit: 100 } }),
  revokeSignIn: (signInId: string) => call('delete', '/api/auth/sessions/{id}', { params: { id: signInId } }),
};

/** Whether `me` came with a sign-in cookie (only then is there anything to sign out of). */
export function hasCookieSession(me: Me | null): boolean {
  return Boolean(me?.session_id);
}
