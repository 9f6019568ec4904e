import { screen, waitFor, within } from '@testing-library/react';
import type { LimitView } from '../api/client';
import { limitsToShow } from '../lib/usageLimits';
import { keys, queryClient } from '../query/client';
import { mockApi, renderPage } from '../test-utils/mockApi';
import { UsageLimitsCard } from './UsageLimitsCard';

const limit = (over: Partial<LimitView>): LimitView => ({
  agent: 'claude', status: 'allowed', reported_at: new Date().toISOString(), ...over,
});
const inHours = (h: number) => new Date(Date.now() + h * 3_600_000 + 60_000).toISOString();

afterEach(() => vi.unstubAllGlobals());

describe('the usage limits card', () => {
  it('lists the limited and warned accounts, limited first, with reset, type and use', async () => {
    mockApi({
      'GET /api/usage/limits': () => [
        limit({ agent: 'codex', status: 'warning', limit_type: 'seven_day', utilization: 0.874, resets_at: inHours(30 * 24) }),
        limit({ agent: 'gemini', status: 'allowed', utilization: 0.1 }),
        limit({ agent: 'claude', status: 'limited', limit_type: 'five_hour', resets_at: inHours(3), message: "You've hit your limit" }),
      ],
    });
    renderPage(<UsageLimitsCard />, '/');
    const card = await screen.findByTestId('usage-limits');
    const rows = within(card).getAllByRole('row').slice(1);
    expect(rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent))).toEqual([
      ['claude', 'limited', 'in 3 h', 'five hour', '—'],
      ['codex', 'warning', 'in 30 days', 'seven day', '87%'],
    ]);
    expect(rows[0].querySelector('.badge')?.className).toContain('limit-limited');
    expect(within(card).queryByText('gemini')).toBeNull();
  });

  it('renders nothing when every account is allowed, none reported, or the board cannot be read', async () => {
    for (const answer of [[limit({})], [], new Response('{}', { status: 503 })]) {
      mockApi({ 'GET /api/usage/limits': () => answer });
      const { container, unmount } = renderPage(<UsageLimitsCard />, '/');
      await waitFor(() => expect(queryClient.getQueryState(keys.usageLimits)?.status).not.toBe('pending'));
      expect(container.querySelector('[data-testid="usage-limits"]')).toBeNull();
      unmount();
    }
  });

  it('keeps the order stable among equals (by agent)', () => {
    const shown = limitsToShow([limit({ agent: 'b', status: 'warning' }), limit({ agent: 'a', status: 'warning' })]);
    expect(shown.map((l) => l.agent)).toEqual(['a', 'b']);
  });
});
