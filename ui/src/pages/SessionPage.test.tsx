import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { MemoryRouter, Route, Routes } from 'react-router-dom';
import type { Message, Session, TurnQueue } from '../api/client';
import { TURNS_POLL_MS } from '../components/LimitNotice';
import type { Frame } from '../lib/sse';
import { applyFrameToCache, resetJournal } from '../store/cacheSync';
import { SessionPage } from './SessionPage';

// The live stream, played by the test: frames are handed to whoever listens.
const stream = vi.hoisted(() => ({ listeners: new Set<(frame: Frame) => void>() }));
vi.mock('../store/live', async () => {
  const { create } = await import('zustand');
  return {
    onFrame: (listener: (frame: Frame) => void) => {
      stream.listeners.add(listener);
      return () => stream.listeners.delete(listener);
    },
    useLive: create(() => ({ connection: 'live' as 'connecting' | 'live' | 'reconnecting' })),
  };
});
const { useLive } = await import('../store/live');

const SID = 'sess-1';
const row = (over: Partial<Session> = {}): Session => ({
  id: SID, project_id: 'p1', name: 'brave otter', status: 'idle', transport: 'stdio', model: 'sonnet', agent: 'claude',
  total_cost_usd: 0.1, total_input_tokens: 10, total_output_tokens: 5, num_turns: 1, session_id: 'cli-123456789',
  created_at: new Date().toISOString(), last_active_at: new Date().toISOString(), workspace_mode: 'shared', ...over,
});
let nextId = 100;
const message = (seq: number | null, direction: string, line: object): Message => ({
  id: nextId++, seq, session_id: SID, direction, message_type: (line as { type: string }).type,
  message_subtype: null, content: JSON.stringify(line), timestamp: '2026-01-01T00:00:00Z',
});
const userLine = (text: string) => ({ type: 'user', message: { role: 'user', content: text } });
const assistantLine = (text: string) => ({ type: 'assistant', message: { id: `m-${text}`, content: [{ type: 'text', text }] } });

interface Server {
  session: Session;
  messages: Message[];
  /** The project's line of turns (`GET /api/projects/p1/turns`). */
  turns: TurnQueue;
  calls: string[];
  answer?: (method: string, path: string) => Response | undefined;
}
let server: Server;

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

beforeEach(() => {
  nextId = 100;
  stream.listeners.clear();
  useLive.setState({ connection: 'live' });
  server = {
    session: row(),
    messages: [message(null, 'to_cli', userLine('hello')), message(1, 'from_cli', assistantLine('Hi there.'))],
    turns: { max_running_turns: null, running: [], waiting: [] },
    calls: [],
  };
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string, init?: RequestInit) => {
      const method = init?.method ?? 'GET';
      server.calls.push(`${method} ${url}`);
      const path = url.split('?')[0];
      const special = server.answer?.(method, path);
      if (special) return special;
      if (path === `/api/sessions/${SID}`) return json(server.session);
      if (path === `/api/sessions/${SID}/messages`) return json(server.messages);
      if (path === `/api/sessions/${SID}/options`) {
        return json({ models: [{ value: 'opus', name: 'Opus' }], modes: ['default', 'plan'], source: 'cli' });
      }
      if (path === '/api/permissions/log') return json([]);
      if (path === '/api/projects/p1/turns') return json(server.turns);
      return json({ error: { code: 'not_found', message: `no ${path}` } }, 404);
    }),
  );
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
  resetJournal();
});

let client: QueryClient;
function renderPage() {
  client = new QueryClient({ defaultOptions: { queries: { retry: false, staleTime: Infinity } } });
  return render(
    <QueryClientProvider client={client}>
      <MemoryRouter initialEntries={[`/sessions/${SID}`]}>
        <Routes>
          <Route path="/sessions/:sessionId" element={<SessionPage />} />
          <Route path="/sessions/:sessionId/review" element={<p>review page</p>} />
        </Routes>
      </MemoryRouter>
    </QueryClientProvider>,
  );
}

const emit = (frame: Partial<Frame>) =>
  act(() => {
    for (const listener of stream.listeners) {
      listener({ event: 'message', session_id: SID, timestamp: '2026-01-01T00:00:05Z', ...frame } as Frame);
    }
  });
/** A frame as store/live.ts applies it: to the listeners, then to the query cache (store/cacheSync.ts). */
const emitLive = (frame: Partial<Frame>) => {
  emit(frame);
  act(() => void applyFrameToCache(client, { event: 'message', timestamp: '2026-01-01T00:00:05Z', ...frame } as Frame));
};
const calls = (what: string) => server.calls.filter((c) => c.includes(what)).length;
const transcript = () => screen.getByTestId('transcript');

describe('SessionPage', () => {
  it('reads the transcript from its end once, then follows the stream without reading again', async () => {
    renderPage();
    await within(await screen.findByTestId('transcript')).findByText('Hi there.');
    expect(server.calls).toContain(`GET /api/sessions/${SID}/messages?tail=true&limit=200&partial=false`);

    // A line already read, relayed again (same seq): not doubled. A new one: appended.
    emit({ type: 'session.message', event: 'assistant', seq: 1, data: assistantLine('Hi there.') });
    emit({ type: 'session.message', event: 'assistant', seq: 2, data: assistantLine('And more.') });
    await within(transcript()).findByText('And more.');
    expect(within(transcript()).getAllByText('Hi there.')).toHaveLength(1);

    // The row comes whole in status frames: no read of the session either.
    emit({ type: 'session.status', event: 'session_status', data: row({ num_turns: 7, total_cost_usd: 2.5 }) });
    await screen.findByText('$2.50');
    expect([calls('/messages'), calls(`GET /api/sessions/${SID}`) - calls('/messages') - calls('/options')]).toEqual([1, 1]);
  });

  it('shows streamed text in a bubble that the whole message replaces', async () => {
    renderPage();
    await within(await screen.findByTestId('transcript')).findByText('Hi there.');
    const delta = (text: string) => emit({ type: 'assistant.delta', event: 'assistant_delta', data: { agent: 'claude', text, item_id: null } });
    delta('Thinking ');
    delta('aloud');
    await screen.findByText('Thinking aloud');
    expect(screen.getByText('writing…')).toBeTruthy();
    emit({ type: 'session.message', event: 'assistant', seq: 2, data: assistantLine('Thinking aloud, done.') });
    await within(transcript()).findByText('Thinking aloud, done.');
    await waitFor(() => expect(screen.queryByText('writing…')).toBeNull());
    expect(screen.queryByText('Thinking aloud')).toBeNull();
  });

  it('says "Interrupted" for a turn the user stopped, and the CLI\'s reason when it refuses', async () => {
    server.session = row({ status: 'active' });
    server.answer = (method, path) =>
      method === 'POST' && path.endsWith('/interrupt')
        ? json({ error: { code: 'refused_by_cli', message: 'no turn is running' } }, 409)
        : undefined;
    renderPage();
    await within(await screen.findByTestId('transcript')).findByText('Hi there.');
    emit({ type: 'session.message', event: 'user', seq: 2, data: { type: 'user', message: { content: [{ type: 'text', text: '[Request interrupted by user]' }] } } });
    emit({ type: 'session.result', event: 'result', seq: 3, data: { type: 'result', subtype: 'error_during_execution', is_error: true } });
    await within(transcript()).findByText('Interrupted');
    expect(screen.queryByText(/Turn failed/)).toBeNull();

    fireEvent.click(screen.getByRole('button', { name: 'Interrupt' }));
    expect((await screen.findByRole('alert')).textContent).toContain('The CLI refused: no turn is running');
  });

  it('offers the modes and models the CLI named', async () => {
    renderPage();
    const select = await screen.findByLabelText('Permission mode');
    await waitFor(() => expect([...select.querySelectorAll('option')].map((o) => o.textContent)).toEqual(['default', 'plan']));
    expect(document.querySelector('#session-models option')?.getAttribute('value')).toBe('opus');
  });

  it('shows why an ended session ended, resumes it and forks it', async () => {
    server.session = row({ status: 'closed', closed_reason: 'requested' });
    server.answer = (method, path) => {
      if (method === 'POST' && path.endsWith('/resume')) return json(row({ status: 'starting' }));
      if (method === 'POST' && path === '/api/projects/p1/sessions') return json(row({ id: 'forked', name: 'fork' }), 201);
      return undefined;
    };
    renderPage();
    expect((await screen.findByText(/has ended/)).textContent).toContain('closed (requested)');
    expect(screen.queryByLabelText('Message')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Resume' }));
    await waitFor(() => expect(screen.getByText('starting')).toBeTruthy());

    fireEvent.click(screen.getByRole('button', { name: 'Fork' }));
    await waitFor(() => expect(calls('POST /api/projects/p1/sessions')).toBe(1));
    const fork = vi.mocked(fetch).mock.calls.find(([url]) => url === '/api/projects/p1/sessions');
    expect(JSON.parse(String(fork?.[1]?.body))).toMatchObject({ resume_session_id: 'cli-123456789', fork_session: true });
  });

  it('lets a session closed for being idle be written to', async () => {
    server.session = row({ status: 'closed', closed_reason: 'idle_timeout' });
    renderPage();
    await screen.findByLabelText('Message');
    expect(screen.getByText(/closed for being idle; a message starts it again/)).toBeTruthy();
  });

  it('lets a session the service left (a stop, a lost keeper) be written to', async () => {
    server.session = row({ status: 'error', closed_reason: 'crashed' });
    renderPage();
    await screen.findByLabelText('Message');
    expect(screen.getByText(/keeper was lost; a message starts it again/)).toBeTruthy();
  });

  it('pauses and unpauses a session, and says why a paused one waits', async () => {
    server.session = row({ status: 'idle' });
    server.answer = (method, path) => {
      if (method === 'POST' && path.endsWith('/pause')) return json(row({ status: 'paused', status_reason: 'paused on request' }));
      if (method === 'POST' && path.endsWith('/unpause')) return json(row({ status: 'idle' }));
      return undefined;
    };
    renderPage();
    fireEvent.click(await screen.findByRole('button', { name: 'Pause' }));
    await waitFor(() => expect(calls('POST /api/sessions/sess-1/pause')).toBe(1));
    // The service tells the new status on the session's stream.
    emitLive({ type: 'session.status', event: 'session_status', data: row({ status: 'paused', status_reason: 'paused on request' }) });
    await screen.findByText(/its processes are frozen/);
    fireEvent.click(screen.getByRole('button', { name: 'Unpause' }));
    await waitFor(() => expect(calls('POST /api/sessions/sess-1/unpause')).toBe(1));
    emitLive({ type: 'session.status', event: 'session_status', data: row({ status: 'idle' }) });
    await screen.findByRole('button', { name: 'Pause' });
  });

  it('reads everything again after a reconnect or a warning about dropped events, and forgets old errors', async () => {
    server.session = row({ status: 'active' });
    server.answer = (method, path) =>
      method === 'POST' && path.endsWith('/interrupt') ? json({ error: { code: 'x', message: 'boom' } }, 500) : undefined;
    renderPage();
    await within(await screen.findByTestId('transcript')).findByText('Hi there.');
    fireEvent.click(screen.getByRole('button', { name: 'Interrupt' }));
    await screen.findByText('boom');

    server.session = row({ status: 'closed', closed_reason: 'cli_exited' });
    server.messages = [...server.messages, message(2, 'from_cli', assistantLine('Said while away.'))];
    act(() => useLive.setState({ connection: 'reconnecting' }));
    act(() => useLive.setState({ connection: 'live' }));
    await within(transcript()).findByText('Said while away.');
    expect((await screen.findByText(/has ended/)).textContent).toContain('closed (cli_exited)');
    expect(screen.queryByText('boom')).toBeNull();

    server.messages = [...server.messages, message(3, 'from_cli', assistantLine('Missed.'))];
    emit({ event: 'warning', session_id: null, dropped: 3 });
    await within(transcript()).findByText('Missed.');
    expect(within(transcript()).getAllByText('Said while away.')).toHaveLength(1);
  });

  it('follows an ACP agent: chunks in the bubble, then in the list once something else happens, then its turn\'s end', async () => {
    server.session = row({ agent: 'gemini', status: 'active' });
    renderPage();
    await within(await screen.findByTestId('transcript')).findByText('Hi there.');
    const chunk = (seq: number, text: string) => {
      const update = { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } };
      emit({ type: 'stream.event', event: 'session/update', seq, data: { jsonrpc: '2.0', method: 'session/update', params: { update } } });
      emit({ type: 'assistant.delta', event: 'assistant_delta', data: { agent: 'gemini', text } });
    };
    chunk(2, 'Let me ');
    chunk(3, 'check.');
    await screen.findByText('writing…');
    const toolCall = { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'ls', kind: 'execute', rawInput: { command: 'ls' } };
    emit({ type: 'session.message', event: 'session/update', seq: 4, data: { jsonrpc: '2.0', method: 'session/update', params: { update: toolCall } } });
    await within(transcript()).findByText('Let me check.');
    await waitFor(() => expect(screen.queryByText('writing…')).toBeNull());
    expect(within(transcript()).getAllByText('Let me check.')).toHaveLength(1);
    emit({ type: 'turn.result', event: 'turn_result', seq: 5, data: { agent: 'gemini', status: 'interrupted', is_error: false } });
    await within(transcript()).findByText('Interrupted');
  });

  it('waiting for a usage limit: the reason, a countdown each second, the queued turns, and the box still writes', async () => {
    const resumesAt = new Date(Date.now() + 72_500).toISOString();
    const reason = "the CLI met a usage limit: You've hit your 5-hour limit · resets 6:51pm (UTC)";
    server.session = row({ status: 'waiting_for_limit', resumes_at: resumesAt, status_reason: reason });
    server.answer = (method, path) =>
      method === 'POST' && path.endsWith('/message') ? json({ queued: true, position: 2 }, 202) : undefined;
    renderPage();
    const notice = await screen.findByTestId('limit-notice');
    expect(notice.textContent).toContain(reason);
    expect(screen.getByText('waiting for limit').className).toContain('status-waiting_for_limit');
    const countdown = () => notice.querySelector('.limit-countdown')?.textContent;
    expect(countdown()).toMatch(/^resumes in 1m 1[23]s$/);
    const first = countdown();
    await waitFor(() => expect(countdown()).not.toBe(first), { timeout: 2_500 });

    // The count of turns kept comes with the event, for this wait only.
    emit({ type: 'usage.limit_reached', event: 'limit_reached', data: { session_id: SID, status: 'waiting_for_limit', resumes_at: resumesAt, queued_turns: 3 } });
    await within(notice).findByText('3 turns queued');

    fireEvent.change(screen.getByLabelText('Message'), { target: { value: 'later please' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send' }));
    await screen.findByText('Queued: 2 turn(s) ahead.');

    // The time has come: the service delivers by itself a moment later (jitter).
    emit({ type: 'session.status', event: 'session_status', data: row({ status: 'waiting_for_limit', resumes_at: new Date(Date.now() - 1000).toISOString(), status_reason: reason }) });
    await waitFor(() => expect(countdown()).toBe('resuming…'));
    emit({ type: 'usage.limit_reset', event: 'limit_reset', data: { session_id: SID, status: 'idle', resumes_at: null, queued_turns: 3 } });
    emit({ type: 'session.status', event: 'session_status', data: row({ status: 'idle' }) });
    await waitFor(() => expect(screen.queryByTestId('limit-notice')).toBeNull());
  });

  it("waiting for a turn slot: its place in the project's line, until the turn starts", async () => {
    renderPage();
    await screen.findByTestId('session-totals');
    expect(screen.queryByTestId('turn-notice')).toBeNull();
    // Another session's wait is not this one's.
    emit({ type: 'session.turn_waiting', event: 'turn_waiting', session_id: 'other', data: { session_id: 'other', project_id: 'p1', position: 1, queued_turns: 1 } });
    emit({ type: 'session.turn_waiting', event: 'turn_waiting', data: { session_id: SID, project_id: 'p1', position: 2, queued_turns: 1 } });
    const notice = await screen.findByTestId('turn-notice');
    expect(notice.textContent).toContain("Waiting for a turn slot: position 2 in the project's line.");
    expect(screen.getByText('idle')).toBeTruthy();

    // Moving up the line; an idle row heard meanwhile keeps the notice.
    emit({ type: 'session.turn_waiting', event: 'turn_waiting', data: { session_id: SID, project_id: 'p1', position: 1, queued_turns: 1 } });
    emit({ type: 'session.status', event: 'session_status', data: row({ status: 'idle' }) });
    await within(notice).findByText("position 1 in the project's line.");

    emit({ type: 'session.status', event: 'session_status', data: row({ status: 'active' }) });
    await waitFor(() => expect(screen.queryByTestId('turn-notice')).toBeNull());
    // Its turn over, the session is idle again: the wait is not shown again.
    emit({ type: 'session.status', event: 'session_status', data: row({ status: 'idle', num_turns: 2 }) });
    await waitFor(() => expect(screen.getByText('idle')).toBeTruthy());
    expect(screen.queryByTestId('turn-notice')).toBeNull();
  });

  it("waiting for a turn slot, from the project's line alone (no event: the page opened after it), until the line no longer lists it", async () => {
    // The line's polling on fake time; the rest (the frames' delayed read, React, waitFor) on real time.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const slot = (session_id: string, position: number) => ({ session_id, position, since: '2026-01-01T00:00:00Z' });
    server.turns = { max_running_turns: 1, running: [slot('s-run', 1)], waiting: [slot('s-first', 1), slot(SID, 2)] };
    renderPage();
    const notice = await screen.findByTestId('turn-notice');
    expect(notice.textContent).toContain("Waiting for a turn slot: position 2 in the project's line.");
    expect(calls('GET /api/projects/p1/turns')).toBe(1);

    // Another session of the project starts its turn: its frame has the line read again.
    server.turns = { max_running_turns: 1, running: [slot('s-first', 1)], waiting: [slot(SID, 1)] };
    emitLive({ type: 'session.status', event: 'session_status', session_id: 's-first', data: row({ id: 's-first', status: 'active' }) });
    await within(notice).findByText("position 1 in the project's line.");
    expect(calls('GET /api/projects/p1/turns')).toBe(2);

    // No frame said it, but the line no longer lists this session: read again after a while, the notice goes.
    server.turns = { max_running_turns: 1, running: [slot('s-first', 1)], waiting: [] };
    act(() => void vi.advanceTimersByTime(TURNS_POLL_MS));
    await waitFor(() => expect(screen.queryByTestId('turn-notice')).toBeNull());
    expect(calls('GET /api/projects/p1/turns')).toBe(3);
    expect(screen.getByText('idle')).toBeTruthy();
  });

  it("reads the project's line once, and not again while it has no limit", async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    renderPage();
    await screen.findByTestId('session-totals');
    await waitFor(() => expect(calls('GET /api/projects/p1/turns')).toBe(1));
    // Time for a read to be asked, had one been due.
    await act(async () => {
      vi.advanceTimersByTime(3 * TURNS_POLL_MS);
      await new Promise((resolve) => setTimeout(resolve, 50));
    });
    expect(calls('GET /api/projects/p1/turns')).toBe(1);
    expect(screen.queryByTestId('turn-notice')).toBeNull();
  });

  it("shows the session's own cost cap when it has one, marked once its cost reached it", async () => {
    renderPage();
    await screen.findByTestId('session-totals');
    expect(screen.queryByTestId('session-cap')).toBeNull();
    emit({ type: 'session.status', event: 'session_status', data: row({ max_budget_usd: 2 }) });
    const cap = await screen.findByTestId('session-cap');
    expect(cap.textContent).toBe('Cost cap$2.00');
    expect(cap.className).not.toContain('total-spent');
    emit({ type: 'session.status', event: 'session_status', data: row({ max_budget_usd: 2, total_cost_usd: 2.01, status: 'paused' }) });
    await waitFor(() => expect(screen.getByTestId('session-cap').className).toContain('total-spent'));
  });

  it('paused: the reason, and a refused message says the service\'s words and when the budget resets', async () => {
    server.session = row({ status: 'paused', status_reason: 'the daily budget of $5.00 is spent' });
    const spent = "The project's daily budget of $5.00 is spent ($5.0100); it resets at 2026-01-02T00:00:00Z, or when it is raised.";
    const refused = () =>
      new Response(JSON.stringify({ error: { code: 'budget_exhausted', message: spent } }), {
        status: 402,
        headers: { 'Content-Type': 'application/json', 'Retry-After': '7260' },
      });
    server.answer = (method, path) => (method === 'POST' && path.endsWith('/message') ? refused() : undefined);
    renderPage();
    expect((await screen.findByTestId('limit-notice')).textContent).toContain('the daily budget of $5.00 is spent');
    // Live: the controls stay, and so does the message box.
    expect(screen.getByRole('button', { name: 'Kill session' })).toBeTruthy();
    fireEvent.change(screen.getByLabelText('Message'), { target: { value: 'go on' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send' }));
    expect((await screen.findByRole('alert')).textContent).toBe(
      `Could not send: ${spent} Resets in 2h 1m.`,
    );
  });
});
