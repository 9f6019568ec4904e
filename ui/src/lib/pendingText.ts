// The assistant's text while it is being written: tokens arrive dozens of times a second, so
// they are gathered here and shown at most once per animation frame, by the one bubble that
// subscribes to the text (the transcript itself only hears whether there is a bubble at all).

type Schedule = (run: () => void) => void;

const nextFrame: Schedule = (run) => {
  if (typeof requestAnimationFrame === 'function') requestAnimationFrame(() => run());
  else setTimeout(run, 16);
};

export class PendingText {
  private buffer = '';
  private shown = '';
  private scheduled = false;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly schedule: Schedule = nextFrame) {}

  /** Adds streamed text; subscribers hear it on the next frame. */
  append(text: string): void {
    if (!text) return;
    this.buffer += text;
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => {
      this.scheduled = false;
      if (this.shown === this.buffer) return;
      this.shown = this.buffer;
      this.emit();
    });
  }

  /**
   * The whole message (or the turn's end) arrived: the bubble goes at once, in the same render
   * that shows the message, so the text never shows twice. `upTo`: only the text streamed
   * before that point (what came after belongs to the next message).
   */
  clear(upTo?: number): void {
    this.buffer = upTo === undefined ? '' : this.buffer.slice(upTo);
    if (this.shown === this.buffer) return;
    this.shown = this.buffer;
    this.emit();
  }

  /** How much text has streamed so far (shown or not): what a later `clear` may remove. */
  length(): number {
    return this.buffer.length;
  }

  /** The text shown now. */
  readonly text = (): string => this.shown;

  /** Whether there is a bubble (changes twice per message, not per token). */
  readonly active = (): boolean => this.shown !== '';

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  };

  private emit(): void {
    for (const listener of this.listeners) listener();
  }
}
