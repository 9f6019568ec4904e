// The sign-in sessions page: the user's sign-ins listed, this browser's marked, each revocable.
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { MemoryRouter } from 'react-router-dom';
import type { SignIn } from '../api/auth';
import { Sidebar } from '../components/Sidebar';
import { useAuth } from '../store/auth';
import { json, mockApi, renderPage } from '../test-utils/mockApi';
import { SignInsPage } from './SignInsPage';

const hour = 3_600_000;
const at = (ms: number) => new Date(Date.now() + ms).toISOString();
const signIn = (over: Partial<SignIn>): SignIn => ({
  id: 'l1', created_at: at(-2 * hour), last_seen_at: at(-hour), expires_at: at(24 * hour), address: '127.0.0.1',
  user_agent: 'Mozilla/5.0 HeadlessChrome', current: false, ...over,
});

let live: SignIn[] = [];

function service() {
  live = [signIn({ id: 'here', current: true }), signIn({ id: 'phone', address: '10.0.0.7', user_agent: 'Phone browser' })];
  return mockApi({
    'GET /api/auth/sessions': () => live,
    'DELETE /api/auth/sessions/here': () => {
      live = live.filter((s) => s.id !== 'here');
      return json(204, null);
    },
    'DELETE /api/auth/sessions/phone': () => {
      live = live.filter((s) => s.id !== 'phone');
      return json(204, null);
    },
  });
}

const rows = () => screen.getAllByTestId('sign-in');

beforeEach(() => {
  useAuth.setState({ status: 'signed-in', me: { kind: 'user', scope: 'admin', user: { id: 'u1', name: 'ada' }, session_id: 'here' }, problem: null });
});
afterEach(() => vi.unstubAllGlobals());

describe('the sign-in sessions page', () => {
  it('lists the sign-ins with where they came from, this browser marked', async () => {
    service();
    renderPage(<SignInsPage />, '/sign-ins');
    await waitFor(() => expect(rows()).toHaveLength(2));
    expect(within(rows()[0]).getByText('this browser')).toBeTruthy();
    expect(within(rows()[0]).getByText('2 h ago')).toBeTruthy();
    expect(within(rows()[0]).getByText('1 h ago')).toBeTruthy();
    expect(within(rows()[1]).queryByText('this browser')).toBeNull();
    expect(within(rows()[1]).getByText('10.0.0.7')).toBeTruthy();
    expect(within(rows()[1]).getByText('Phone browser')).toBeTruthy();
    expect(screen.getByText('2 sign-ins')).toBeTruthy();
  });

  it('revokes another sign-in and reads the list again, still signed in', async () => {
    const seen = service();
    renderPage(<SignInsPage />, '/sign-ins');
    await waitFor(() => expect(rows()).toHaveLength(2));
    fireEvent.click(within(rows()[1]).getByRole('button', { name: /Revoke/ }));
    await waitFor(() => expect(rows()).toHaveLength(1));
    expect(seen.filter((r) => r.method === 'DELETE').map((r) => r.url.pathname)).toEqual(['/api/auth/sessions/phone']);
    expect(useAuth.getState().status).toBe('signed-in');
  });

  it('revoking this browser’s own sign-in signs it out', async () => {
    service();
    renderPage(<SignInsPage />, '/sign-ins');
    await waitFor(() => expect(rows()).toHaveLength(2));
    fireEvent.click(within(rows()[0]).getByRole('button', { name: /signs you out/ }));
    await waitFor(() => expect(useAuth.getState().status).toBe('signed-out'));
    expect(useAuth.getState().me).toBeNull();
  });

  it('says so when there is no sign-in (a token or HTTP Basic)', async () => {
    mockApi({ 'GET /api/auth/sessions': () => [] });
    renderPage(<SignInsPage />, '/sign-ins');
    await screen.findByText('No sign-in.');
  });
});

describe('the sidebar link to it', () => {
  const overview = { projects: [], live: [], sessions: [], loading: false, historyLoading: false, error: undefined };
  const renderSidebar = () =>
    render(
      <MemoryRouter>
        <Sidebar overview={overview} onCreate={() => {}} onImport={() => {}} onClose={() => {}} />
      </MemoryRouter>,
    );

  it('is there for a user', () => {
    renderSidebar();
    expect(screen.getByRole('link', { name: 'Sign-in sessions' }).getAttribute('href')).toBe('/sign-ins');
  });

  it('is not there for a token or open mode (they have no sign-ins)', () => {
    useAuth.setState({ status: 'signed-in', me: { kind: 'local', scope: 'admin' }, problem: null });
    renderSidebar();
    expect(screen.queryByRole('link', { name: 'Sign-in sessions' })).toBeNull();
    expect(screen.getByRole('link', { name: 'Processes' })).toBeTruthy();
  });
});
