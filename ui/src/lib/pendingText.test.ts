import { PendingText } from './pendingText';

describe('PendingText', () => {
  it('shows the tokens of a frame at once, on the frame, and goes at once when the message is whole', () => {
    const frames: (() => void)[] = [];
    const text = new PendingText((run) => frames.push(run));
    let heard = 0;
    text.subscribe(() => heard++);
    text.append('Hel');
    text.append('lo');
    expect([text.text(), text.active(), frames.length, heard]).toEqual(['', false, 1, 0]);
    frames.shift()?.();
    expect([text.text(), text.active(), heard]).toEqual(['Hello', true, 1]);
    text.append(' world');
    text.clear();
    expect([text.text(), text.active(), heard]).toEqual(['', false, 2]);
    // The frame scheduled before the clear finds nothing new to show.
    frames.shift()?.();
    expect([text.text(), heard]).toEqual(['', 2]);
  });

  it('keeps what streamed after the point a clear was asked for', () => {
    const text = new PendingText((run) => run());
    text.append('first message');
    const upTo = text.length();
    text.append('next');
    text.clear(upTo);
    expect(text.text()).toBe('next');
  });
});
