import { isLive, resumesIn, statusLabel, bytes } from './format';

describe('the countdown to a limit wait', () => {
  const now = Date.parse('2026-03-01T18:00:00Z');
  const at = (seconds: number) => new Date(now + seconds * 1000).toISOString();

  it('counts down in minutes and seconds, then hours', () => {
    expect(resumesIn(at(72), now)).toBe('resumes in 1m 12s');
    expect(resumesIn(at(45), now)).toBe('resumes in 45s');
    expect(resumesIn(at(2 * 3600 + 5 * 60), now)).toBe('resumes in 2h 5m');
  });

  it('rounds up, so the last second still reads as ahead, then says it is resuming', () => {
    expect(resumesIn(at(0.2), now)).toBe('resumes in 1s');
    expect(resumesIn(at(0), now)).toBe('resuming…');
    expect(resumesIn(at(-30), now)).toBe('resuming…');
  });

  it('says something sensible without a time', () => {
    expect(resumesIn(null, now)).toBe('resumes when the limit resets');
    expect(resumesIn('soon', now)).toBe('resumes at soon');
  });
});

describe('session statuses', () => {
  it('read as words', () => {
    expect(statusLabel('waiting_for_limit')).toBe('waiting for limit');
    expect(statusLabel('paused')).toBe('paused');
    expect(statusLabel('compacting')).toBe('compacting');
  });

  it('waiting for a limit and paused are live (the CLI runs, turns wait); closed and error are not', () => {
    expect(['waiting_for_limit', 'paused', 'idle', 'starting'].map(isLive)).toEqual([true, true, true, true]);
    expect(['closed', 'error'].map(isLive)).toEqual([false, false]);
  });
});

describe('bytes', () => {
  it('read in binary units, with a decimal under ten', () => {
    expect(bytes(null)).toBe('—');
    expect(bytes(512)).toBe('512 B');
    expect(bytes(1536)).toBe('1.5 KiB');
    expect(bytes(64 * 1024 * 1024)).toBe('64 MiB');
    expect(bytes(3 * 1024 ** 3)).toBe('3.0 GiB');
  });
});
