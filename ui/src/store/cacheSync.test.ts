import { QueryClient } from '@tanstack/react-query';
import type { Decision, Project, Rule, Session } from '../api/client';
import type { Frame } from '../lib/sse';
import { keys } from '../query/client';
import { applyFrameToCache, liveFetch, resetJournal } from './cacheSync';
import { sortRules } from './framePatches';

const session = (over: Partial<Session>): Session => ({
  id: 's1', project_id: 'p1', name: 'brave otter', status: 'idle', transport: 'stdio', total_cost_usd: 0,
  total_input_tokens: 0, total_output_tokens: 0, num_turns: 0, created_at: '2026-01-01T00:00:00Z',
  last_active_at: '2026-01-01T00:00:00Z', workspace_mode: 'shared', agent: 'claude', ...over,
});

const project = (over: Partial<Project>): Project => ({
  id: 'p1', name: 'one', folder_path: '/x/one', project_type: 'generic', source: 'created', max_sessions: 5,
  created_at: '', updated_at: '', workspace_mode: 'shared', workspace_copy: [], nodes: [], ...over,
} as Project);

const rule = (over: Partial<Rule>): Rule => ({
  id: 'r1', tool_name: 'Bash', rule_content: 'rm:*', behavior: 'deny', priority: 0, project_id: null,
  created_at: '2026-01-01T00:00:00Z', updated_at: '', ...over,
});

const frame = (type: string, data: unknown, over: Partial<Frame> = {}): Frame => ({
  event: type.replace('.', '_'), type, seq: 1, session_id: null, data, ...over,
});

let client: QueryClient;
beforeEach(() => {
  client = new QueryClient();
  resetJournal();
});

describe('session rows from the stream', () => {
  it('update the session, its project list and the live list, without creating lists nobody loaded', () => {
    client.setQueryData(keys.session('s1'), session({ status: 'starting' }));
    client.setQueryData(keys.projectSessions('p1'), [session({ id: 'old' })]);
    client.setQueryData(keys.activeSessions, []);
    applyFrameToCache(client, frame('session.created', session({ status: 'idle', total_cost_usd: 0.5 })));
    expect(client.getQueryData<Session>(keys.session('s1'))?.total_cost_usd).toBe(0.5);
    expect(client.getQueryData<Session[]>(keys.projectSessions('p1'))?.map((s) => s.id)).toEqual(['s1', 'old']);
    expect(client.getQueryData<Session[]>(keys.activeSessions)?.map((s) => s.id)).toEqual(['s1']);
    expect(client.getQueryData(keys.projectSessions('p2'))).toBeUndefined();

    applyFrameToCache(client, frame('session.closed', session({ status: 'closed', total_cost_usd: 0.75 })));
    expect(client.getQueryData<Session[]>(keys.activeSessions)).toEqual([]);
    const list = client.getQueryData<Session[]>(keys.projectSessions('p1'));
    expect(list?.map((s) => [s.id, s.status, s.total_cost_usd])).toEqual([['s1', 'closed', 0.75], ['old', 'idle', 0]]);
  });

  it('ignore a session.error that carries only a message, and partial tokens', () => {
    const before = [session({})];
    client.setQueryData(keys.activeSessions, before);
    applyFrameToCache(client, frame('session.error', { message: 'boom' }, { session_id: 's1' }));
    applyFrameToCache(client, frame('stream.event', { type: 'stream_event' }, { session_id: 's1' }));
    expect(client.getQueryData(keys.activeSessions)).toBe(before);
  });

  it('are replayed over an answer that was in flight when they came', async () => {
    let answer: (rows: Session[]) => void = () => {};
    const fetched = new Promise<Session[]>((r) => (answer = r));
    const query = client.fetchQuery({ queryKey: keys.activeSessions, queryFn: liveFetch(keys.activeSessions, () => fetched) });
    await Promise.resolve();
    // The service read its rows, then s1 closed and s2 started; the answer arrives afterwards.
    applyFrameToCache(client, frame('session.closed', session({ status: 'closed' })));
    applyFrameToCache(client, frame('session.created', session({ id: 's2', status: 'starting' })));
    answer([session({ status: 'active' })]);
    expect((await query).map((s) => s.id)).toEqual(['s2']);
  });
});

describe('projects, rules, agents and webhooks', () => {
  it('patch the project list and a project, and drop a deleted one with its live sessions', () => {
    client.setQueryData(keys.projects, [project({})]);
    client.setQueryData(keys.project('p1'), project({}));
    client.setQueryData(keys.activeSessions, [session({}), session({ id: 's2', project_id: 'p2' })]);
    applyFrameToCache(client, frame('project.created', project({ id: 'p2', name: 'two' })));
    applyFrameToCache(client, frame('project.updated', project({ description: 'new' })));
    expect(client.getQueryData<Project[]>(keys.projects)?.map((p) => p.id)).toEqual(['p1', 'p2']);
    expect(client.getQueryData<Project>(keys.project('p1'))?.description).toBe('new');
    applyFrameToCache(client, frame('project.deleted', { id: 'p1' }));
    expect(client.getQueryData<Project[]>(keys.projects)?.map((p) => p.id)).toEqual(['p2']);
    expect(client.getQueryData<Session[]>(keys.activeSessions)?.map((s) => s.id)).toEqual(['s2']);
    expect(client.getQueryState(keys.project('p1'))?.isInvalidated).toBe(true);
  });

  it('put a rule in its own list in evaluation order, and remove a deleted one from any list', () => {
    client.setQueryData(keys.globalRules, [rule({})]);
    client.setQueryData(keys.projectRules('p1'), []);
    applyFrameToCache(client, frame('rule.created', rule({ id: 'r2', behavior: 'allow', rule_content: 'ls:*' })));
    applyFrameToCache(client, frame('rule.created', rule({ id: 'r3', project_id: 'p1' })));
    applyFrameToCache(client, frame('rule.created', rule({ id: 'r4', priority: 9 })));
    expect(client.getQueryData<Rule[]>(keys.globalRules)?.map((r) => r.id)).toEqual(['r4', 'r1', 'r2']);
    expect(client.getQueryData<Rule[]>(keys.projectRules('p1'))?.map((r) => r.id)).toEqual(['r3']);
    applyFrameToCache(client, frame('rule.updated', rule({ id: 'r2', behavior: 'allow', rule_content: 'cat:*' })));
    expect(client.getQueryData<Rule[]>(keys.globalRules)?.[2].rule_content).toBe('cat:*');
    applyFrameToCache(client, frame('rule.deleted', { id: 'r3' }));
    applyFrameToCache(client, frame('rule.deleted', { id: 'r2' }));
    expect(client.getQueryData<Rule[]>(keys.projectRules('p1'))).toEqual([]);
    expect(client.getQueryData<Rule[]>(keys.globalRules)?.map((r) => r.id)).toEqual(['r4', 'r1']);
  });

  it('sorts rules deny first, then by priority, then oldest first', () => {
    const rules = [
      rule({ id: 'a', behavior: 'allow', priority: 5 }),
      rule({ id: 'b', priority: 1, created_at: '2026-02-01' }),
      rule({ id: 'c', priority: 1, created_at: '2026-01-01' }),
    ];
    expect(sortRules(rules).map((r) => r.id)).toEqual(['c', 'b', 'a']);
  });
});

describe('permission decisions', () => {
  const data = {
    session_id: 's1', project_id: 'p1', request_id: 'req-1', tool_name: 'Bash', tool_input: '{"command":"rm x"}',
    decision: 'deny', decision_source: 'auto_rule', decision_point: 'hook', rule_id: 'r1', decided_at: '2026-01-01T00:00:01Z',
  };

  it('are prepended to the lists whose filter they fit, once, within the limit', () => {
    const old: Decision = { ...(data as unknown as Decision), id: 7, request_id: 'req-0', decision: 'allow' };
    client.setQueryData(keys.decisions({ limit: 1 }), [old]);
    client.setQueryData(keys.decisions({ session_id: 's1' }), [old]);
    client.setQueryData(keys.decisions({ session_id: 's2' }), [old]);
    client.setQueryData(keys.decisions({ decision: 'allow' }), [old]);
    const f = frame('permission.decision', data, { session_id: 's1', seq: 42 });
    applyFrameToCache(client, f);
    applyFrameToCache(client, f);
    expect(client.getQueryData<Decision[]>(keys.decisions({ limit: 1 }))?.map((d) => d.id)).toEqual([-42]);
    expect(client.getQueryData<Decision[]>(keys.decisions({ session_id: 's1' }))?.map((d) => d.id)).toEqual([-42, 7]);
    expect(client.getQueryData<Decision[]>(keys.decisions({ session_id: 's2' }))?.map((d) => d.id)).toEqual([7]);
    expect(client.getQueryData<Decision[]>(keys.decisions({ decision: 'allow' }))?.map((d) => d.id)).toEqual([7]);
  });

  it('are recognised in a refetched list by request and time', async () => {
    const f = frame('permission.decision', data, { session_id: 's1', seq: 42 });
    const stored: Decision = { ...(data as unknown as Decision), id: 100 };
    const key = keys.decisions({});
    let answer: (rows: Decision[]) => void = () => {};
    const query = client.fetchQuery({ queryKey: key, queryFn: liveFetch(key, () => new Promise<Decision[]>((r) => (answer = r))) });
    await Promise.resolve();
    applyFrameToCache(client, f);
    answer([stored]);
    expect((await query).map((d) => d.id)).toEqual([100]);
  });
});

describe('a warning about dropped events', () => {
  it('refetches everything once and starts failed queries over', () => {
    client.setQueryData(keys.projects, []);
    const asked = applyFrameToCache(client, { event: 'warning', dropped: 3 });
    expect(asked).toBe(true);
    expect(client.getQueryState(keys.projects)?.isInvalidated).toBe(true);
  });
});
