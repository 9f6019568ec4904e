import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { Decision, Rule } from '../api/client';
import { LOG_PAGE } from '../api/permissions';
import { listenForPageFrames } from '../query/pageFrames';
import { queryClient } from '../query/client';
import { applyFrame } from '../store/live';
import { FakeService, renderAt } from './pageTestKit';
import { PermissionsPage } from './PermissionsPage';

const decision = (id: number, over: Partial<Decision> = {}): Decision => ({
  id, request_id: `r${id}`, decision_point: 'hook', tool_name: 'Read', tool_input: `{"file_path":"/srv/f${id}"}`,
  decision: 'allow', decision_source: 'auto_default', decided_at: '2026-01-01T00:00:00Z', project_id: 'p1', session_id: 's1', ...over,
});
const rule: Rule = {
  id: 'rule-1', tool_name: 'Bash', rule_content: 'rm:*', behavior: 'deny', priority: 0, project_id: 'p1',
  created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z',
};

let service: FakeService;
let stopFrames: () => void;
beforeAll(() => {
  stopFrames = listenForPageFrames();
});
afterAll(() => stopFrames());
beforeEach(() => {
  queryClient.clear();
  // A log of 60 decisions, newest (highest id) first, filtered and paged as the service does.
  const all = Array.from({ length: 60 }, (_, i) => decision(60 - i));
  all[0] = decision(60, { tool_name: 'Bash', tool_input: '{"command":"rm -rf build"}', decision: 'deny', decision_source: 'auto_rule', rule_id: 'rule-1', reason: 'Denied by rule' });
  service = new FakeService()
    .on('GET', '/api/projects', { body: [{ id: 'p1', name: 'shop' }] })
    .on('GET', '/api/rules/global', { body: [] })
    .on('GET', '/api/projects/p1/rules', { body: [rule] })
    .on('GET', '/api/permissions/log', (req) => {
      const wanted = req.query.get('decision');
      const rows = all.filter((d) => !wanted || d.decision === wanted);
      const offset = Number(req.query.get('offset') ?? 0);
      return { body: rows.slice(offset, offset + Number(req.query.get('limit'))) };
    });
  vi.stubGlobal('fetch', service.fetch);
});
afterEach(() => vi.unstubAllGlobals());

const page = { '/permissions': <PermissionsPage /> };

describe('the permission log', () => {
  it('shows each decision with its subject and rule, and loads more a page at a time', async () => {
    renderAt('/permissions', page);
    await waitFor(() => expect(screen.getAllByTestId('permission-row')).toHaveLength(LOG_PAGE));
    const first = screen.getAllByTestId('permission-row')[0];
    expect(first.getAttribute('data-decision')).toBe('deny');
    expect(within(first).getByText('rm -rf build')).toBeTruthy();
    await waitFor(() => expect(within(first).getByTestId('permission-rule').textContent).toContain('by rule deny Bash(rm:*)'));
    expect(within(first).getByRole('link', { name: 'shop' }).getAttribute('href')).toBe('/projects/p1');
    expect(within(screen.getAllByTestId('permission-row')[1]).getByText('/srv/f59')).toBeTruthy();

    fireEvent.click(screen.getByTestId('permission-load-more'));
    await waitFor(() => expect(screen.getAllByTestId('permission-row')).toHaveLength(60));
    expect(service.callsTo('GET', '/api/permissions/log')[1].query.get('offset')).toBe(String(LOG_PAGE));
    expect(screen.queryByTestId('permission-load-more')).toBeNull();
  });

  it('filters by decision through the address and puts matching live decisions on top', async () => {
    renderAt('/permissions', page);
    await waitFor(() => expect(screen.getAllByTestId('permission-row')).toHaveLength(LOG_PAGE));
    fireEvent.change(screen.getByRole('combobox', { name: 'Decision' }), { target: { value: 'deny' } });
    await waitFor(() => expect(screen.getByTestId('location').textContent).toBe('/permissions?decision=deny'));
    await waitFor(() => expect(screen.getAllByTestId('permission-row')).toHaveLength(1));
    expect(service.calls.at(-1)?.query.get('decision')).toBe('deny');
    const reads = service.callsTo('GET', '/api/permissions/log').length;

    act(() => applyFrame({ event: 'permission', type: 'permission.decision', session_id: 's2', data: decision(61, { session_id: 's2' }) }, 1));
    act(() =>
      applyFrame(
        { event: 'permission', type: 'permission.decision', session_id: 's2', data: decision(62, { session_id: 's2', decision: 'deny', tool_name: 'Write', tool_input: '{"file_path":"/etc/passwd"}' }) },
        2,
      ),
    );
    await waitFor(() => expect(screen.getAllByTestId('permission-row')).toHaveLength(2));
    expect(within(screen.getAllByTestId('permission-row')[0]).getByText('/etc/passwd')).toBeTruthy();
    expect(service.callsTo('GET', '/api/permissions/log')).toHaveLength(reads);
  });
});
