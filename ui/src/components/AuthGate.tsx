// Shows the app only to a signed-in tab. On start it asks `GET /api/auth/me`; a 401 then or
// from any later call shows the login page in the app's place. The address is left alone, so
// after signing in the user is on the page they were going to.
import { useEffect, type ReactNode } from 'react';
import { LoginPage } from '../pages/LoginPage';
import { checkIdentity, useAuth } from '../store/auth';
import { ErrorNote } from './ui';
import '../login.css';

export function AuthGate({ children }: { children: ReactNode }) {
  const status = useAuth((s) => s.status);
  const problem = useAuth((s) => s.problem);
  useEffect(() => {
    // Asked once per page load; later changes come from 401s and from the forms.
    if (useAuth.getState().status === 'checking') void checkIdentity();
  }, []);

  if (status === 'signed-in') return <>{children}</>;
  if (status === 'signed-out') return <LoginPage />;
  return (
    <div className="login-screen">
      <div className="login-card" data-testid="auth-checking">
        {status === 'checking' ? (
          <p className="muted">Checking whether you are signed in…</p>
        ) : (
          <>
            <ErrorNote error={problem ?? undefined} what="reach the service" />
            <button className="button primary" onClick={() => void checkIdentity()}>
              Try again
            </button>
          </>
        )}
      </div>
    </div>
  );
}
