import type { Frame } from './sse';
import { alertFor, NOTIFY_KEY, Notifier } from './notify';

const names = (id: string) => (id === 's1' ? 'brave otter' : undefined);
const frame = (type: string, data: unknown, session_id: string | null = 's1'): Frame => ({ event: type, type, session_id, data });

describe('what deserves an alert', () => {
  it('a finished or failed turn, a denial, a session error; nothing else', () => {
    expect(alertFor(frame('session.result', { subtype: 'success', is_error: false, result: 'All done.' }), names)).toEqual({
      title: 'brave otter: turn finished', body: 'All done.', tag: 'turn:s1', path: '/sessions/s1',
    });
    expect(alertFor(frame('session.result', { is_error: true, result: 'API error' }), names)?.title).toBe('brave otter: turn failed');
    const deny = alertFor(frame('permission.decision', { decision: 'deny', tool_name: 'Bash', tool_input: '{"command":"rm -rf /"}' }), names);
    expect([deny?.title, deny?.body]).toEqual(['brave otter: Bash denied', 'rm -rf /']);
    expect(alertFor(frame('permission.decision', { decision: 'allow', tool_name: 'Bash', tool_input: '{}' }), names)).toBeNull();
    expect(alertFor(frame('session.error', { message: 'the CLI exited' }, 's9'), names)).toEqual({
      title: 'A session failed', body: 'the CLI exited', tag: 'error:s9', path: '/sessions/s9',
    });
    for (const type of ['stream.event', 'assistant.delta', 'session.status', 'session.message']) {
      expect(alertFor(frame(type, {}), names)).toBeNull();
    }
  });

  it('a usage limit met, with the CLI\'s words and when the turns go again; not its reset', () => {
    const resumes = '2026-03-01T18:51:30Z';
    const data = { session_id: 's1', status: 'waiting_for_limit', resumes_at: resumes, message: "You've hit your 5-hour limit", queued_turns: 1 };
    expect(alertFor(frame('usage.limit_reached', data), names)).toEqual({
      title: 'brave otter: usage limit reached',
      body: `You've hit your 5-hour limit Resumes at ${new Date(resumes).toLocaleTimeString()}.`,
      tag: 'limit:s1',
      path: '/sessions/s1',
    });
    // The frame may name its session only in its data.
    expect(alertFor(frame('usage.limit_reached', { ...data, session_id: 's9', resumes_at: null }, null), names)).toMatchObject({
      title: 'A session: usage limit reached', body: "You've hit your 5-hour limit", path: '/sessions/s9',
    });
    expect(alertFor(frame('usage.limit_reset', { ...data, status: 'idle' }), names)).toBeNull();
  });

  it('takes turn.result from other agents only, so a Claude Code turn alerts once', () => {
    expect(alertFor(frame('turn.result', { agent: 'claude', text: 'x' }), names)).toBeNull();
    expect(alertFor(frame('turn.result', { agent: 'codex', text: 'Fixed it.', is_error: false }), names)?.body).toBe('Fixed it.');
  });
});

class FakeNotification {
  static permission: NotificationPermission = 'default';
  static requestPermission = vi.fn(async () => {
    FakeNotification.permission = 'granted';
    return 'granted' as NotificationPermission;
  });
  static shown: { title: string; body?: string }[] = [];
  onclick: (() => void) | null = null;
  constructor(title: string, options?: NotificationOptions) {
    FakeNotification.shown.push({ title, body: options?.body });
  }
  close() {}
}

function setup(hidden: boolean) {
  const doc = { title: 'Conduit', hidden, hasFocus: () => !hidden };
  const storage = new Map<string, string>();
  const fakeStorage = {
    getItem: (k: string) => storage.get(k) ?? null,
    setItem: (k: string, v: string) => void storage.set(k, v),
  } as unknown as Storage;
  FakeNotification.permission = 'default';
  FakeNotification.shown = [];
  FakeNotification.requestPermission.mockClear();
  const open = vi.fn();
  const notifier = new Notifier({
    doc: doc as unknown as Document,
    api: FakeNotification as unknown as typeof Notification,
    storage: fakeStorage,
    nameOf: names,
    open,
  });
  return { doc, notifier, open, storage };
}

const turn = frame('session.result', { result: 'done' });

describe('the notifier', () => {
  it('counts alerts in the title while the tab is hidden, and clears them when it is seen', () => {
    const { doc, notifier } = setup(true);
    notifier.handle(turn);
    notifier.handle(frame('stream.event', {}));
    notifier.handle(frame('session.error', { message: 'x' }));
    notifier.handle(frame('permission.decision', { decision: 'deny', tool_name: 'Bash', tool_input: '{}' }));
    expect(doc.title).toBe('(3) Conduit');
    doc.hidden = false;
    notifier.seen();
    expect(doc.title).toBe('Conduit');
    notifier.handle(turn);
    expect(doc.title).toBe('Conduit');
  });

  it('never asks for permission by itself, and shows nothing until the user turns notifications on', async () => {
    const { notifier, open, storage } = setup(true);
    notifier.handle(turn);
    expect(FakeNotification.requestPermission).not.toHaveBeenCalled();
    expect(FakeNotification.shown).toEqual([]);
    expect(await notifier.enable()).toBe(true);
    expect(FakeNotification.requestPermission).toHaveBeenCalledTimes(1);
    expect(storage.get(NOTIFY_KEY)).toBe('on');
    notifier.handle(turn);
    expect(FakeNotification.shown).toEqual([{ title: 'brave otter: turn finished', body: 'done' }]);
    notifier.disable();
    notifier.handle(turn);
    expect(FakeNotification.shown).toHaveLength(1);
    expect(open).not.toHaveBeenCalled();
  });

  it('does not notify while the user is looking at the page', async () => {
    const { notifier } = setup(false);
    await notifier.enable();
    notifier.handle(turn);
    expect(FakeNotification.shown).toEqual([]);
  });
});
