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
