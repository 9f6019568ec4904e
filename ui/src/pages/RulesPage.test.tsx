import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { Project, Rule } from '../api/client';
import { applyFrame } from '../store/live';
import { apiError, json, mockApi, renderPage } from '../test-utils/mockApi';
import { RulesPage } from './RulesPage';

const project = (id: string, name: string): Project => ({
  id, name, folder_path: `/src/${name}`, project_type: 'generic', source: 'manual', max_sessions: 3,
  created_at: '2025-01-01T00:00:00Z', updated_at: '2025-01-01T00:00:00Z', workspace_mode: 'shared', workspace_copy: [], nodes: [], env: {},
});

const rule = (over: Partial<Rule>): Rule => ({
  id: 'r', tool_name: 'Bash', rule_content: '', behavior: 'deny', priority: 0, project_id: null,
  created_at: '2025-01-01T00:00:00Z', updated_at: '2025-01-01T00:00:00Z', ...over,
});

const globalAllow = rule({ id: 'g1', behavior: 'allow', tool_name: 'Read', rule_content: 'src/**' });
const globalDeny = rule({ id: 'g2', behavior: 'deny', rule_content: 'rm:*' });
const appDeny = rule({ id: 'p1r', project_id: 'p1', rule_content: 'git push:*' });

function routes(extra: Record<string, (req: { body: unknown }) => unknown> = {}) {
  return mockApi({
    'GET /api/projects': () => [project('p1', 'app'), project('p2', 'docs')],
    'GET /api/rules/global': () => [globalDeny, globalAllow],
    'GET /api/projects/p1/rules': () => [appDeny],
    'GET /api/projects/p2/rules': () => [],
    ...extra,
  });
}

const rows = () => screen.queryAllByTestId('rule-row');

describe('RulesPage', () => {
  it('lists global allow and deny rules and every project rule, with their scope', async () => {
    routes();
    renderPage(<RulesPage />, '/rules');
    await waitFor(() => expect(rows()).toHaveLength(3));
    expect(screen.getByTestId('rules-page')).toBeTruthy();
    const text = rows().map((r) => r.textContent);
    expect(text[0]).toContain('global');
    expect(text.some((t) => t?.includes('allow') && t.includes('src/**'))).toBe(true);
    expect(within(rows()[2]).getByRole('link', { name: 'app' }).getAttribute('href')).toBe('/projects/p1');
  });

  it('filters by behavior and by project', async () => {
    routes();
    renderPage(<RulesPage />, '/rules');
    await waitFor(() => expect(rows()).toHaveLength(3));
    fireEvent.change(screen.getByLabelText('Filter by behavior'), { target: { value: 'allow' } });
    expect(rows()).toHaveLength(1);
    expect(rows()[0].textContent).toContain('src/**');
    fireEvent.change(screen.getByLabelText('Filter by behavior'), { target: { value: 'any' } });
    fireEvent.change(screen.getByLabelText('Filter by scope'), { target: { value: 'p1' } });
    expect(rows()).toHaveLength(1);
    expect(rows()[0].textContent).toContain('git push:*');
    fireEvent.change(screen.getByLabelText('Filter by scope'), { target: { value: 'p2' } });
    expect(screen.getByText('No rule matches these filters.')).toBeTruthy();
  });

  it('creates a rule for a chosen project and shows it at once', async () => {
    const seen = routes({
      'POST /api/projects/p2/rules': (req) => json(201, rule({ id: 'new', project_id: 'p2', ...(req.body as Partial<Rule>) })),
    });
    renderPage(<RulesPage />, '/rules');
    await waitFor(() => expect(rows()).toHaveLength(3));
    const form = screen.getByRole('form', { name: 'Add rule' });
    fireEvent.change(within(form).getByLabelText('Scope'), { target: { value: 'p2' } });
    fireEvent.change(within(form).getByLabelText('Pattern'), { target: { value: 'curl:*' } });
    fireEvent.submit(form);
    await waitFor(() => expect(rows()).toHaveLength(4));
    const post = seen.find((r) => r.method === 'POST');
    expect(post?.body).toEqual({ tool_name: 'Bash', rule_content: 'curl:*', behavior: 'deny', priority: 0 });
    expect(rows().some((r) => r.textContent?.includes('docs') && r.textContent.includes('curl:*'))).toBe(true);
  });

  it("shows the API's message when a rule is refused", async () => {
    routes({ 'POST /api/rules/global': () => apiError(422, 'validation_failed', 'bad glob: [') });
    renderPage(<RulesPage />, '/rules');
    await waitFor(() => expect(rows()).toHaveLength(3));
    const form = screen.getByRole('form', { name: 'Add rule' });
    fireEvent.change(within(form).getByLabelText('Pattern'), { target: { value: '[' } });
    fireEvent.submit(form);
    expect((await screen.findByRole('alert')).textContent).toContain('bad glob: [');
  });

  it('edits a rule with PUT and deletes one', async () => {
    const seen = routes({
      'PUT /api/rules/g2': (req) => ({ ...globalDeny, ...(req.body as Partial<Rule>) }),
      'DELETE /api/rules/p1r': () => json(204, null),
    });
    renderPage(<RulesPage />, '/rules');
    await waitFor(() => expect(rows()).toHaveLength(3));
    const row = rows().find((r) => r.textContent?.includes('rm:*')) as HTMLElement;
    fireEvent.click(within(row).getByRole('button', { name: 'Edit' }));
    const form = screen.getByRole('form', { name: 'Save' });
    fireEvent.change(within(form).getByLabelText('Priority'), { target: { value: '7' } });
    fireEvent.submit(form);
    await waitFor(() => expect(rows().some((r) => r.textContent?.includes('rm:*') && r.textContent.includes('7'))).toBe(true));
    expect(seen.find((r) => r.method === 'PUT')?.body).toMatchObject({ priority: 7, rule_content: 'rm:*' });

    const projectRow = rows().find((r) => r.textContent?.includes('git push')) as HTMLElement;
    fireEvent.click(within(projectRow).getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(rows()).toHaveLength(2));
  });

  it('follows rule.created, rule.updated and rule.deleted frames without refetching', async () => {
    const seen = routes();
    renderPage(<RulesPage />, '/rules');
    await waitFor(() => expect(rows()).toHaveLength(3));
    const reads = seen.length;
    const frame = (type: string, data: unknown) => ({ event: type.split('.')[1], type, session_id: null, data });
    act(() => applyFrame(frame('rule.created', rule({ id: 'g3', behavior: 'allow', tool_name: 'Grep' })), 1));
    await waitFor(() => expect(rows()).toHaveLength(4));
    act(() => applyFrame(frame('rule.updated', { ...appDeny, rule_content: 'git push --force:*' }), 2));
    await waitFor(() => expect(screen.getByText('git push --force:*')).toBeTruthy());
    act(() => applyFrame(frame('rule.deleted', { id: 'g1' }), 3));
    await waitFor(() => expect(rows()).toHaveLength(3));
    expect(screen.queryByText('src/**')).toBeNull();
    expect(seen.length).toBe(reads);
  });
});
