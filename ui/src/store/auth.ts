// Whether this tab is signed in, and as whom. The auth gate (components/AuthGate.tsx) renders
// from it: the app only when signed in, the login page otherwise. Any 401 the API gives later
// (an expired or revoked cookie) turns it back to signed out, wherever it came from.
import { create } from 'zustand';
import { ApiError, onUnauthorized } from '../api/client';
import { auth, type Me } from '../api/auth';
import { queryClient } from '../query/client';
import { holdQueriesForStream } from './cacheSync';
import { useLive } from './live';

export type AuthStatus = 'checking' | 'signed-out' | 'signed-in' | 'unreachable';

interface AuthState {
  status: AuthStatus;
  me: Me | null;
  /** Why the identity could not be read (status `unreachable`). */
  problem: string | null;
}

export const useAuth = create<AuthState>(() => ({ status: 'checking', me: null, problem: null }));

/** Asks the service who this tab is, and shows the app or the login page accordingly. */
export async function checkIdentity(): Promise<void> {
  useAuth.setState({ status: 'checking', problem: null });
  try {
    enter(await auth.me());
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) signedOut();
    else useAuth.setState({ status: 'unreachable', me: null, problem: e instanceof Error ? e.message : String(e) });
  }
}

/**
 * Shows the app as `me`. Whatever was cached belongs to whoever came before (or is a 401):
 * it is dropped, and the first reads wait for the live stream again as on a fresh start.
 */
export function enter(me: Me): void {
  queryClient.clear();
  useLive.setState({ lastEventId: null });
  holdQueriesForStream();
  useAuth.setState({ status: 'signed-in', me, problem: null });
}

/** Shows the login page (the app, its queries and its live stream unmount with it). */
export function signedOut(): void {
  useAuth.setState({ status: 'signed-out', me: null, problem: null });
}

/** Ends this browser's sign-in; the login page shows even if the service could not be told. */
export async function signOut(): Promise<void> {
  try {
    await auth.logout();
  } catch {
    // Already signed out (401) or the service is away: the page shows signed out either way.
  }
  signedOut();
}

// Only a tab that is signed in (or finding out) is sent back to the login page: the login
// page's own wrong passwords must not reset it.
onUnauthorized(() => {
  if (useAuth.getState().status !== 'signed-out') signedOut();
});
