import { focusManager } from '@tanstack/react-query';
import { act, screen, waitFor, within } from '@testing-library/react';
import type { LockState } from '../api/tools';
import { apiError, mockApi, renderPage } from '../test-utils/mockApi';
import { LOCKS_REFRESH_MS, LocksPage } from './LocksPage';

const now = new Date().toISOString();
const held: LockState = {
  path: '/srv/app',
  holder: { holder: 'agent nightly (execution 1f0c…)', since: now },
  waiters: [
    { holder: 'agent lint (execution 2a)', since: now },
    { holder: 'agent docs (execution 3b)', since: now },
  ],
};

describe('LocksPage', () => {
  afterEach(() => {
    vi.useRealTimers();
    focusManager.setFocused(undefined);
  });

  it('shows each folder with its holder and its waiters in order', async () => {
    mockApi({ 'GET /api/locks': () => [held, { path: '/srv/docs', holder: null, waiters: [] }] });
    renderPage(<LocksPage />, '/locks');
    const locks = await screen.findAllByTestId('lock');
    expect(screen.getByTestId('locks-page')).toBeTruthy();
    expect(locks[0].textContent).toContain('/srv/app');
    expect(locks[0].textContent).toContain('agent nightly (execution 1f0c…)');
    const waiters = within(locks[0]).getAllByRole('listitem');
    expect(waiters.map((w) => w.textContent?.split(' waiting')[0])).toEqual(['agent lint (execution 2a)', 'agent docs (execution 3b)']);
    expect(locks[1].textContent).toContain('Nobody waits.');
  });

  it('says so when no folder is locked, and shows a failure in words', async () => {
    mockApi({ 'GET /api/locks': () => [] });
    renderPage(<LocksPage />, '/locks');
    expect(await screen.findByText('No folder is locked.')).toBeTruthy();

    mockApi({ 'GET /api/locks': () => apiError(503, 'unavailable', 'the scheduler is gone') });
    renderPage(<LocksPage />, '/locks');
    expect((await screen.findByRole('alert')).textContent).toContain('the scheduler is gone');
  });

  it('reads the queue again every 5 s while visible, and not while hidden', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const seen = mockApi({ 'GET /api/locks': () => [held] });
    renderPage(<LocksPage />, '/locks');
    await screen.findAllByTestId('lock');
    expect(seen).toHaveLength(1);
    await act(() => vi.advanceTimersByTimeAsync(LOCKS_REFRESH_MS + 10));
    await waitFor(() => expect(seen).toHaveLength(2));

    act(() => focusManager.setFocused(false));
    await act(() => vi.advanceTimersByTimeAsync(LOCKS_REFRESH_MS * 3));
    expect(seen).toHaveLength(2);
  });
});
