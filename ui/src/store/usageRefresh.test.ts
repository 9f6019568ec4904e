import { QueryClient, QueryObserver } from '@tanstack/react-query';
import type { Session } from '../api/client';
import type { Frame } from '../lib/sse';
import { keys } from '../query/client';
import { applyFrameToCache, resetJournal } from './cacheSync';
import { changesLimits, changesTurnsOf, storesUsage, USAGE_REFRESH_MS } from './usageRefresh';

const session = (over: Partial<Session>): Session => ({
  id: 's1', project_id: 'p1', name: 'brave otter', status: 'idle', transport: 'stdio', total_cost_usd: 0.5,
  total_input_tokens: 10, total_output_tokens: 5, num_turns: 1, created_at: '2026-01-01T00:00:00Z',
  last_active_at: '2026-01-01T00:00:00Z', workspace_mode: 'shared', agent: 'claude', ...over,
});

const frame = (type: string, data: unknown): Frame => ({ event: type.replace(/\./g, '_'), type, seq: 1, session_id: 's1', data });

let client: QueryClient;
beforeEach(() => {
  client = new QueryClient();
  resetJournal();
});
afterEach(() => {
  resetJournal();
  vi.useRealTimers();
});

describe('when the cost ledger grew', () => {
  it('a session row whose totals differ from the cached row means a stored turn', () => {
    client.setQueryData(keys.projectSessions('p1'), [session({})]);
    expect(storesUsage(client, frame('session.status', session({ status: 'active' })))).toBe(false);
    expect(storesUsage(client, frame('session.status', session({ total_cost_usd: 0.75 })))).toBe(true);
    // A turn that reported tokens but no cost is in the ledger too.
    expect(storesUsage(client, frame('session.status', session({ total_output_tokens: 9 })))).toBe(true);
  });

  it('one stale copy is enough (the session page writes its own row before the cache sync)', () => {
    client.setQueryData(keys.session('s1'), session({ total_cost_usd: 0.75 }));
    client.setQueryData(keys.activeSessions, [session({})]);
    expect(storesUsage(client, frame('session.status', session({ total_cost_usd: 0.75 })))).toBe(true);
  });

  it('a session nobody cached counts when its totals are not zero', () => {
    const fresh = { total_cost_usd: 0, total_input_tokens: 0, total_output_tokens: 0 };
    expect(storesUsage(client, frame('session.created', session(fresh)))).toBe(false);
    expect(storesUsage(client, frame('session.status', session({})))).toBe(true);
  });

  it("a finished run of a scheduled agent does; other frames, and rows of no session, don't", () => {
    expect(storesUsage(client, frame('agent.execution.finished', { id: 'e1', agent_id: 'a1', status: 'success' }))).toBe(true);
    expect(storesUsage(client, frame('agent.execution.started', { id: 'e1', agent_id: 'a1', status: 'running' }))).toBe(false);
    expect(storesUsage(client, frame('assistant.delta', { text: 'x' }))).toBe(false);
    expect(storesUsage(client, frame('session.error', { message: 'boom' }))).toBe(false);
  });
});

describe('reading usage again', () => {
  it('once for a burst of frames, after a short delay, and only the usage queries', async () => {
    vi.useFakeTimers();
    const invalidate = vi.spyOn(client, 'invalidateQueries');
    client.setQueryData(keys.projectSessions('p1'), [session({})]);
    for (let i = 1; i <= 5; i++) applyFrameToCache(client, frame('session.status', session({ total_cost_usd: 0.5 + i })));
    applyFrameToCache(client, frame('agent.execution.finished', { id: 'e1', agent_id: 'a1', status: 'success' }));
    expect(invalidate).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(USAGE_REFRESH_MS);
    expect(invalidate).toHaveBeenCalledTimes(1);
    expect(invalidate).toHaveBeenCalledWith({ queryKey: keys.usageAll });
    // The next change after that read gets a read of its own.
    applyFrameToCache(client, frame('session.status', session({ total_cost_usd: 9 })));
    await vi.advanceTimersByTimeAsync(USAGE_REFRESH_MS);
    expect(invalidate).toHaveBeenCalledTimes(2);
  });

  it('not for token-by-token frames nor a status change that cost nothing', async () => {
    vi.useFakeTimers();
    const invalidate = vi.spyOn(client, 'invalidateQueries');
    client.setQueryData(keys.projectSessions('p1'), [session({})]);
    for (let i = 0; i < 50; i++) {
      applyFrameToCache(client, frame('stream.event', { type: 'stream_event' }));
      applyFrameToCache(client, frame('assistant.delta', { text: 'x' }));
    }
    applyFrameToCache(client, frame('session.status', session({ status: 'active' })));
    await vi.advanceTimersByTimeAsync(USAGE_REFRESH_MS * 4);
    expect(invalidate).not.toHaveBeenCalled();
  });

  it('refetches a usage query on screen, with what the ledger says now', async () => {
    let cost = 1;
    const usage = vi.fn(async () => ({ total: { cost_usd: cost } }));
    // An observer makes the query active, as a mounted `useQuery` does.
    const watching = new QueryObserver(client, { queryKey: keys.usage({}), queryFn: usage, staleTime: Infinity });
    const unsubscribe = watching.subscribe(() => {});
    await vi.waitFor(() => expect(client.getQueryData(keys.usage({}))).toEqual({ total: { cost_usd: 1 } }));
    cost = 2;
    vi.useFakeTimers();
    applyFrameToCache(client, frame('agent.execution.finished', { id: 'e1', agent_id: 'a1', status: 'success' }));
    await vi.advanceTimersByTimeAsync(USAGE_REFRESH_MS);
    vi.useRealTimers();
    await vi.waitFor(() => expect(client.getQueryData(keys.usage({}))).toEqual({ total: { cost_usd: 2 } }));
    expect(usage).toHaveBeenCalledTimes(2);
    unsubscribe();
  });
});

describe('reading the usage-limit board again', () => {
  const limitData = (over: object = {}) => ({
    session_id: 's1', project_id: 'p1', agent: 'claude', status: 'waiting_for_limit', resumes_at: '2026-01-01T05:00:00Z',
    resets_at: '2026-01-01T05:00:00Z', limit_type: 'five_hour', kind: 'usage_limit', message: 'limit', queued_turns: 2, ...over,
  });

  it('a session or a run meeting a limit, or a session ending its wait, changes it; nothing else does', () => {
    expect(changesLimits(frame('usage.limit_reached', limitData()))).toBe(true);
    expect(changesLimits(frame('agent.execution.limit_reached', { id: 'e1', status: 'waiting_for_limit' }))).toBe(true);
    expect(changesLimits(frame('usage.limit_reset', limitData({ status: 'idle' })))).toBe(true);
    expect(changesLimits(frame('session.status', session({ status: 'waiting_for_limit' })))).toBe(false);
    expect(changesLimits(frame('agent.execution.finished', { id: 'e1' }))).toBe(false);
  });

  it('once for a burst (sessions of one account park together), only the limits, and apart from the costs', async () => {
    vi.useFakeTimers();
    const invalidate = vi.spyOn(client, 'invalidateQueries');
    applyFrameToCache(client, frame('usage.limit_reached', limitData()));
    applyFrameToCache(client, frame('usage.limit_reached', limitData({ session_id: 's2' })));
    applyFrameToCache(client, frame('agent.execution.finished', { id: 'e1', agent_id: 'a1', status: 'success' }));
    expect(invalidate).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(USAGE_REFRESH_MS);
    expect(invalidate.mock.calls.map(([filter]) => filter?.queryKey)).toEqual(expect.arrayContaining([keys.usageAll, keys.usageLimits]));
    expect(invalidate).toHaveBeenCalledTimes(2);
    applyFrameToCache(client, frame('usage.limit_reset', limitData({ status: 'idle' })));
    await vi.advanceTimersByTimeAsync(USAGE_REFRESH_MS);
    expect(invalidate).toHaveBeenLastCalledWith({ queryKey: keys.usageLimits });
    expect(invalidate).toHaveBeenCalledTimes(3);
  });

  it('refetches the board on screen, not the cost sums', async () => {
    let status = 'allowed';
    const limits = vi.fn(async () => [{ agent: 'claude', status }]);
    const costs = vi.fn(async () => ({ total: { cost_usd: 1 } }));
    const watching = [
      new QueryObserver(client, { queryKey: keys.usageLimits, queryFn: limits, staleTime: Infinity }),
      new QueryObserver(client, { queryKey: keys.usage({}), queryFn: costs, staleTime: Infinity }),
    ];
    const stops = watching.map((w) => w.subscribe(() => {}));
    await vi.waitFor(() => expect(client.getQueryData(keys.usageLimits)).toEqual([{ agent: 'claude', status: 'allowed' }]));
    status = 'limited';
    vi.useFakeTimers();
    applyFrameToCache(client, frame('usage.limit_reached', limitData()));
    await vi.advanceTimersByTimeAsync(USAGE_REFRESH_MS);
    vi.useRealTimers();
    await vi.waitFor(() => expect(client.getQueryData(keys.usageLimits)).toEqual([{ agent: 'claude', status: 'limited' }]));
    expect([limits.mock.calls.length, costs.mock.calls.length]).toEqual([2, 1]);
    stops.forEach((stop) => stop());
  });
});

describe("reading a project's line of turns again", () => {
  it('on a session status change or a waiting turn, for its project; not on messages or costs alone', () => {
    expect(changesTurnsOf(frame('session.status', session({ status: 'active' })))).toBe('p1');
    expect(changesTurnsOf(frame('session.closed', session({ project_id: 'p2', status: 'closed' })))).toBe('p2');
    expect(changesTurnsOf(frame('session.turn_waiting', { session_id: 's1', project_id: 'p3', position: 1, queued_turns: 1 }))).toBe('p3');
    expect(changesTurnsOf(frame('session.message', { id: 1 }))).toBeNull();
    expect(changesTurnsOf(frame('usage.limit_reached', { session_id: 's1', project_id: 'p1' }))).toBeNull();
  });

  it('once for a burst, per project whose line was read', async () => {
    for (const p of ['p1', 'p2']) client.setQueryData(keys.projectTurns(p), { running: [], waiting: [] });
    vi.useFakeTimers();
    const invalidate = vi.spyOn(client, 'invalidateQueries');
    applyFrameToCache(client, frame('session.status', session({ status: 'active' })));
    applyFrameToCache(client, frame('session.turn_waiting', { session_id: 's2', project_id: 'p1', position: 1 }));
    applyFrameToCache(client, frame('session.status', session({ id: 's3', project_id: 'p2', status: 'active' })));
    applyFrameToCache(client, frame('session.status', session({ id: 's4', project_id: 'p9', status: 'active' })));
    await vi.advanceTimersByTimeAsync(USAGE_REFRESH_MS);
    const turnKeys = invalidate.mock.calls.map(([filter]) => filter?.queryKey).filter((k) => k?.[0] === 'turns');
    expect(turnKeys).toEqual([keys.projectTurns('p1'), keys.projectTurns('p2')]);
  });
});
