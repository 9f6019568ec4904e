// The login page: a user's name and password for `POST /api/auth/login`, which answers with
// the sign-in cookie. Shown by the auth gate instead of the app whenever the tab is signed out.
import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { auth } from '../api/auth';
import { enter } from '../store/auth';

/** What the form says about a failed sign-in. */
export function loginProblem(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) return 'Wrong name or password.';
    if (error.status === 429) {
      const wait = error.retryAfter;
      const when = wait === undefined ? 'a while' : `${wait} ${wait === 1 ? 'second' : 'seconds'}`;
      return `Too many sign-in attempts from here. Wait ${when}, then try again.`;
    }
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

export function LoginPage() {
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [submitting, setSubmitting] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSubmitting(true);
    setProblem(null);
    try {
      await auth.login({ name, password });
      // The cookie is set: ask who that makes us, for the top bar and the sessions page.
      const me = await auth.me();
      enter(me);
    } catch (error) {
      setProblem(loginProblem(error));
      setSubmitting(false);
    }
  };

  return (
    <div className="login-screen">
      <form className="login-card" onSubmit={(e) => void submit(e)} data-testid="login-page" aria-labelledby="login-title">
        <div className="login-brand">
          <span className="brand-mark" />
          Conduit
        </div>
        <h1 id="login-title">Sign in</h1>
        <label className="field">
          <span className="field-label">Name</span>
          <input name="name" autoComplete="username" value={name} onChange={(e) => setName(e.target.value)} required autoFocus />
        </label>
        <label className="field">
          <span className="field-label">Password</span>
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            required
          />
        </label>
        {problem && (
          <div className="error-note" role="alert" data-testid="login-error">
            {problem}
          </div>
        )}
        <button className="button primary" type="submit" disabled={submitting || !name || !password}>
          {submitting ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </div>
  );
}
