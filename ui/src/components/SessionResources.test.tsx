import { screen, waitFor } from '@testing-library/react';
import { mockApi, renderPage } from '../test-utils/mockApi';
import { SessionResources } from './SessionResources';

afterEach(() => vi.unstubAllGlobals());

const view = (resources: object | null) => ({
  id: 's1', project_id: 'p1', name: 'n', status: 'idle', transport: 'stdio', agent: 'claude', total_cost_usd: 0,
  total_input_tokens: 0, total_output_tokens: 0, num_turns: 0, created_at: '', last_active_at: '',
  workspace_mode: 'shared', resources,
});

describe('what a session uses', () => {
  it('shows memory with its peak, CPU, processes and the OOM kills', async () => {
    mockApi({
      'GET /api/sessions/s1': () =>
        view({ memory_bytes: 48 * 1024 * 1024, memory_peak_bytes: 64 * 1024 * 1024, cpu_usec: 2_500_000, pids: 7, oom_kills: 2 }),
    });
    renderPage(<SessionResources sessionId="s1" live />, '/');
    const strip = await screen.findByTestId('session-resources');
    expect(strip.textContent).toBe('Memory 48 MiB (peak 64 MiB) · CPU 2.5s · 7 processes · 2 killed for memory');
    expect(strip.querySelector('.resources-oom')).not.toBeNull();
  });

  it('leaves out what is unknown, and shows nothing without readings or once ended', async () => {
    mockApi({ 'GET /api/sessions/s1': () => view({ memory_bytes: 1024, memory_peak_bytes: null, cpu_usec: null, pids: null, oom_kills: 0 }) });
    const first = renderPage(<SessionResources sessionId="s1" live />, '/');
    expect((await screen.findByTestId('session-resources')).textContent).toBe('Memory 1.0 KiB · CPU — · — processes');
    first.unmount();
    const seen = mockApi({ 'GET /api/sessions/s1': () => view(null) });
    const none = renderPage(<SessionResources sessionId="s1" live />, '/');
    await waitFor(() => expect(seen.length).toBe(1));
    expect(none.container.textContent).toBe('');
    none.unmount();
    const ended = mockApi({});
    const closed = renderPage(<SessionResources sessionId="s1" live={false} />, '/');
    expect(closed.container.textContent).toBe('');
    expect(ended.length).toBe(0);
  });
});
