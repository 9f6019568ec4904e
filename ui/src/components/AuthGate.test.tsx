// The auth gate, the login page and signing out, against a mocked API.
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { QueryClientProvider } from '@tanstack/react-query';
import { MemoryRouter, Route, Routes } from 'react-router-dom';
import type { Me } from '../api/auth';
import { api } from '../api/client';
import { Notifier } from '../lib/notify';
import { queryClient } from '../query/client';
import { useAuth } from '../store/auth';
import { apiError, json, mockApi, type Handler } from '../test-utils/mockApi';
import { AuthGate } from './AuthGate';
import { TopBar } from './TopBar';

const unauthorized = () => apiError(401, 'unauthorized', 'A credential is needed.');
const adaWithCookie: Me = { kind: 'user', scope: 'admin', user: { id: 'u1', name: 'ada' }, session_id: 'l1' };
const loggedIn = { user: { id: 'u1', name: 'ada' }, session: { id: 'l1', created_at: '', expires_at: '' } };

const notifier = new Notifier({ doc: document, nameOf: () => undefined, open: () => {} });

/** The gate around a stand-in for the app: the top bar and a line of text. */
function renderGate() {
  return render(
    <QueryClientProvider client={queryClient}>
      <MemoryRouter>
        <AuthGate>
          <TopBar menuOpen={false} onMenu={() => {}} onSwitcher={() => {}} totalCost={0} notifier={notifier} />
          <p>the app itself</p>
        </AuthGate>
      </MemoryRouter>
    </QueryClientProvider>,
  );
}

/** A service where `me` answers 401 until a login with `ada`/`right` succeeds. */
function service(extra: Record<string, Handler> = {}) {
  let signedIn = false;
  return mockApi({
    'GET /api/auth/me': () => (signedIn ? adaWithCookie : unauthorized()),
    'POST /api/auth/login': (req) => {
      const { name, password } = req.body as { name: string; password: string };
      if (name !== 'ada' || password !== 'right') return apiError(401, 'bad_login', 'The name or the password is wrong.');
      signedIn = true;
      return loggedIn;
    },
    'POST /api/auth/logout': () => {
      signedIn = false;
      return json(204, null);
    },
    ...extra,
  });
}

const nameField = () => screen.getByLabelText('Name');
const passwordField = () => screen.getByLabelText('Password');
const signInButton = () => screen.getByRole('button', { name: /Sign in/ });

function signIn(name: string, password: string) {
  fireEvent.change(nameField(), { target: { value: name } });
  fireEvent.change(passwordField(), { target: { value: password } });
  fireEvent.click(signInButton());
}

beforeEach(() => {
  queryClient.clear();
  useAuth.setState({ status: 'checking', me: null, problem: null });
});
afterEach(() => vi.unstubAllGlobals());

describe('the auth gate', () => {
  it('shows the login page, not the app, when the service answers 401 to "who am I"', async () => {
    service();
    renderGate();
    await screen.findByRole('heading', { name: 'Sign in' });
    expect(screen.queryByText('the app itself')).toBeNull();
    expect(nameField()).toBeTruthy();
    expect(passwordField().getAttribute('type')).toBe('password');
  });

  it('shows the app at once in open mode, with no sign-out (there is no cookie to end)', async () => {
    mockApi({ 'GET /api/auth/me': () => ({ kind: 'local', scope: 'admin' }) });
    renderGate();
    await screen.findByText('the app itself');
    expect(screen.queryByTestId('sign-out')).toBeNull();
  });

  it('gives a token no sign-out button either', async () => {
    mockApi({ 'GET /api/auth/me': () => ({ kind: 'token', scope: 'write' }) });
    renderGate();
    await screen.findByText('the app itself');
    expect(screen.queryByTestId('sign-out')).toBeNull();
  });

  it('says when the name or password is wrong, and stays on the login page', async () => {
    service();
    renderGate();
    await screen.findByLabelText('Name');
    signIn('ada', 'wrong');
    expect((await screen.findByRole('alert')).textContent).toBe('Wrong name or password.');
    expect(screen.queryByText('the app itself')).toBeNull();
    expect((signInButton() as HTMLButtonElement).disabled).toBe(false);
  });

  it('says how long to wait after too many attempts (Retry-After)', async () => {
    service({
      'POST /api/auth/login': () =>
        new Response(JSON.stringify({ error: { code: 'too_many_logins', message: 'Too many.' } }), {
          status: 429,
          headers: { 'Content-Type': 'application/json', 'Retry-After': '42' },
        }),
    });
    renderGate();
    await screen.findByLabelText('Name');
    signIn('ada', 'right');
    expect((await screen.findByRole('alert')).textContent).toBe('Too many sign-in attempts from here. Wait 42 seconds, then try again.');
  });

  it('disables the button while signing in, then shows the app with the user and a sign-out', async () => {
    let signedIn = false;
    let answer = () => {};
    const seen = mockApi({
      'GET /api/auth/me': () => (signedIn ? adaWithCookie : unauthorized()),
      // Held until the test lets the service answer.
      'POST /api/auth/login': () =>
        new Promise<Response>((resolve) => {
          answer = () => {
            signedIn = true;
            resolve(json(200, loggedIn));
          };
        }),
    });
    renderGate();
    await screen.findByLabelText('Name');
    signIn('ada', 'right');
    await waitFor(() => expect((screen.getByRole('button', { name: 'Signing in…' }) as HTMLButtonElement).disabled).toBe(true));
    expect(seen.find((r) => r.url.pathname === '/api/auth/login')?.body).toEqual({ name: 'ada', password: 'right' });
    act(() => answer());
    await screen.findByText('the app itself');
    expect(screen.getByTestId('signed-in-as').textContent).toBe('ada');
    expect(screen.getByTestId('sign-out')).toBeTruthy();
  });

  it('after signing in, shows the page that was asked for', async () => {
    service();
    render(
      <QueryClientProvider client={queryClient}>
        <MemoryRouter initialEntries={['/locks']}>
          <AuthGate>
            <Routes>
              <Route path="/" element={<p>the dashboard</p>} />
              <Route path="/locks" element={<p>the locks page</p>} />
            </Routes>
          </AuthGate>
        </MemoryRouter>
      </QueryClientProvider>,
    );
    await screen.findByLabelText('Name');
    signIn('ada', 'right');
    await screen.findByText('the locks page');
  });

  it('signs out from the top bar: logout is called and the login page shows', async () => {
    const seen = service();
    renderGate();
    await screen.findByLabelText('Name');
    signIn('ada', 'right');
    fireEvent.click(await screen.findByTestId('sign-out'));
    await screen.findByRole('heading', { name: 'Sign in' });
    expect(seen.filter((r) => r.url.pathname === '/api/auth/logout').map((r) => r.method)).toEqual(['POST']);
    expect(screen.queryByText('the app itself')).toBeNull();
  });

  it('goes back to the login page when any later call answers 401 (the sign-in expired)', async () => {
    mockApi({ 'GET /api/auth/me': () => adaWithCookie, 'GET /api/projects': () => unauthorized() });
    renderGate();
    await screen.findByText('the app itself');
    await act(async () => {
      await api.projects().catch(() => {});
    });
    await screen.findByRole('heading', { name: 'Sign in' });
  });

  it('offers to try again when the service cannot be reached', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => Promise.reject(new TypeError('offline'))));
    renderGate();
    await screen.findByText(/cannot be reached/);
    service({ 'GET /api/auth/me': () => adaWithCookie });
    fireEvent.click(screen.getByRole('button', { name: 'Try again' }));
    await screen.findByText('the app itself');
  });
});
