// The current time, for text that counts down or ages ("resumes in 1m 12s", "in 3 h").
import { useEffect, useState } from 'react';

/** `Date.now()`, again every `intervalMs` while `running` (no timer otherwise). */
export function useNow(intervalMs: number, running = true): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!running) return;
    // At once too: a countdown shown again after a pause must not start from a stale time.
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs, running]);
  return now;
}
