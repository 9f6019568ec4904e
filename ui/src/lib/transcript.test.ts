import type { Decision, Message } from '../api/client';
import { buildTranscript } from './transcript';

let id = 0;
const line = (direction: string, type: string, content: object, subtype: string | null = null): Message => ({
  id: ++id, session_id: 's', direction, message_type: type, message_subtype: subtype,
  content: JSON.stringify(content), timestamp: '2026-01-01T00:00:00Z',
});

const decision = (over: Partial<Decision>): Decision => ({
  id: 1, request_id: 'r', decision_point: 'hook', tool_name: 'Bash', tool_input: '{}', decision: 'allow',
  decision_source: 'auto_default', decided_at: '2026-01-01T00:00:00Z', ...over,
});

describe('buildTranscript', () => {
  it('reads a turn with a denied tool call: user, text, tool with result and decision, result', () => {
    const messages = [
      line('from_cli', 'system', { type: 'system', subtype: 'init', model: 'claude-x' }, 'init'),
      line('to_cli', 'user', { type: 'user', message: { role: 'user', content: 'delete it' } }),
      line('from_cli', 'assistant', {
        type: 'assistant',
        message: { content: [{ type: 'text', text: 'Trying.' }, { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'rm x' } }] },
      }),
      line('from_cli', 'user', {
        type: 'user',
        message: { content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'denied by rule' }], is_error: true }] },
      }),
      line('from_cli', 'control_request', { type: 'control_request' }),
      line('from_cli', 'result', { type: 'result', subtype: 'success', result: 'done', total_cost_usd: 0.25, duration_ms: 1500 }, 'success'),
    ];
    const deny = decision({ tool_use_id: 'toolu_1', decision: 'deny', reason: 'denied by rule r1' });
    const items = buildTranscript(messages, [deny]);
    expect(items.map((i) => i.kind)).toEqual(['system', 'user', 'assistant', 'tool', 'result']);
    expect(items[0]).toMatchObject({ text: 'Running claude-x.' });
    expect(items[1]).toMatchObject({ text: 'delete it' });
    expect(items[3]).toMatchObject({
      name: 'Bash', input: { command: 'rm x' }, result: { text: 'denied by rule', isError: true }, decision: deny,
    });
    expect(items[4]).toMatchObject({ ok: true, cost: 0.25, durationMs: 1500 });
  });

  it('mentions the model once per change, and API retries', () => {
    const init = (model: string) => line('from_cli', 'system', { type: 'system', subtype: 'init', model }, 'init');
    const retry = line('from_cli', 'system', { type: 'system', subtype: 'api_retry', attempt: 2, max_retries: 10 }, 'api_retry');
    const items = buildTranscript([init('a'), init('a'), retry, init('b'), init('b')]);
    expect(items.map((i) => i.kind === 'system' && i.text)).toEqual([
      'Running a.',
      'The model API did not answer; the CLI retries (attempt 2 of 10).',
      'Running b.',
    ]);
  });

  it('skips lines that are not JSON and marks failed results', () => {
    const bad: Message = { ...line('from_cli', 'invalid', {}), content: 'not json' };
    const failed = line('from_cli', 'result', { type: 'result', subtype: 'error_during_execution', is_error: true });
    const items = buildTranscript([bad, failed]);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ kind: 'result', ok: false, text: 'error_during_execution' });
  });
});

describe('buildTranscript: interrupts', () => {
  const user = (text: string) => line('to_cli', 'user', { type: 'user', message: { role: 'user', content: text } });
  const mark = () =>
    line('from_cli', 'user', { type: 'user', message: { role: 'user', content: [{ type: 'text', text: '[Request interrupted by user]' }] } });
  const failed = () =>
    line('from_cli', 'result', { type: 'result', subtype: 'error_during_execution', is_error: true }, 'error_during_execution');
  const results = (items: ReturnType<typeof buildTranscript>) =>
    items.filter((i) => i.kind === 'result').map((i) => (i.kind === 'result' && (i.interrupted ? 'interrupted' : i.ok ? 'ok' : 'failed')));

  it('reads a failed result after the interrupt mark as interrupted, in either order', () => {
    expect(results(buildTranscript([user('a'), mark(), failed()]))).toEqual(['interrupted']);
    expect(results(buildTranscript([user('a'), failed(), mark()]))).toEqual(['interrupted']);
  });

  it('takes Conduit\'s own interrupt request as the mark too, and forgets it at the next turn', () => {
    const interrupt = line('to_cli', 'control_request', { type: 'control_request', request: { subtype: 'interrupt' } }, 'interrupt');
    expect(results(buildTranscript([user('a'), interrupt, failed(), user('b'), failed()]))).toEqual(['interrupted', 'failed']);
  });

  it('keeps a failure with no interrupt a failure, and the mark is no user bubble', () => {
    const items = buildTranscript([user('a'), failed(), user('b'), mark()]);
    expect(results(items)).toEqual(['failed']);
    expect(items.filter((i) => i.kind === 'user').map((i) => i.kind === 'user' && i.text)).toEqual(['a', 'b']);
  });

  it('marks an interrupted tool call\'s turn too', () => {
    const toolUse = line('from_cli', 'assistant', {
      type: 'assistant', message: { content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'sleep 100' } }] },
    });
    const toolMark = line('from_cli', 'user', {
      type: 'user',
      message: { content: [{ type: 'tool_result', tool_use_id: 't1', content: '[Request interrupted by user for tool use]', is_error: true }] },
    });
    const items = buildTranscript([user('a'), toolUse, toolMark, failed()]);
    expect(results(items)).toEqual(['interrupted']);
    expect(items[1]).toMatchObject({ kind: 'tool', result: { isError: true } });
  });
});

describe('buildTranscript: other agents', () => {
  const rpc = (method: string, params: object, subtype: string | null = null) =>
    line('from_cli', method, { method, params }, subtype);

  it('reads Codex: text, a command with its output, and an interrupted turn', () => {
    const items = buildTranscript([
      line('to_cli', 'user', { type: 'user', message: { role: 'user', content: 'list' } }),
      rpc('item/agentMessage/delta', { delta: 'Look' }),
      rpc('item/completed', { item: { type: 'agentMessage', id: 'i1', text: 'Looking.' } }),
      rpc('item/started', { item: { type: 'commandExecution', id: 'c1', command: 'ls', cwd: '/p' } }),
      rpc('item/completed', { item: { type: 'commandExecution', id: 'c1', command: 'ls', aggregatedOutput: 'a\nb', exitCode: 0, status: 'completed' } }),
      rpc('turn/completed', { turn: { id: 't', status: 'interrupted' } }),
      rpc('turn/completed', { turn: { id: 't2', status: 'failed', error: { message: 'quota' } } }),
    ]);
    expect(items.map((i) => i.kind)).toEqual(['user', 'assistant', 'tool', 'result', 'result']);
    expect(items[1]).toMatchObject({ text: 'Looking.' });
    expect(items[2]).toMatchObject({ name: 'Bash', input: { command: 'ls' }, result: { text: 'a\nb', isError: false } });
    expect(items[3]).toMatchObject({ interrupted: true });
    expect(items[4]).toMatchObject({ ok: false, text: 'quota' });
  });

  it('reads ACP: chunks as one message, a tool call, and a cancelled prompt as interrupted', () => {
    const chunk = (text: string) =>
      rpc('session/update', { update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } }, 'agent_message_chunk');
    const items = buildTranscript([
      chunk('Hel'),
      chunk('lo'),
      rpc('session/update', { update: { sessionUpdate: 'tool_call', toolCallId: 'x', title: 'rm -f a', kind: 'execute', rawInput: { command: 'rm -f a' } } }),
      rpc('session/update', { update: { sessionUpdate: 'tool_call_update', toolCallId: 'x', status: 'failed', content: [{ type: 'content', content: { type: 'text', text: 'no' } }] } }),
      chunk('Stopped'),
      line('from_cli', 'control_response', { jsonrpc: '2.0', id: 'h-1', result: { sessionId: 's' } }),
      line('from_cli', 'control_response', { jsonrpc: '2.0', id: 'prompt-1', result: { stopReason: 'cancelled' } }),
    ]);
    expect(items.map((i) => i.kind)).toEqual(['assistant', 'tool', 'assistant', 'result']);
    expect(items[0]).toMatchObject({ text: 'Hello' });
    expect(items[1]).toMatchObject({ name: 'rm -f a', result: { text: 'no', isError: true } });
    expect(items[3]).toMatchObject({ interrupted: true });
  });

  it('keys live lines by their key and stored rows by their id', () => {
    const live = { key: 'l42', direction: 'from_cli', message_type: 'result', content: '{"type":"result","subtype":"success"}', timestamp: '' };
    const items = buildTranscript([line('to_cli', 'user', { type: 'user', message: { content: 'x' } }), live]);
    expect(items.map((i) => i.key)).toEqual([String(id), 'l42']);
  });
});
