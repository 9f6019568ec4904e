import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError } from '../api/client';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  /** True until the first answer (later reloads keep showing the previous data). */
  loading: boolean;
  reload: () => void;
}

// Session lines and audit rows are written behind, in batches: an event can arrive a moment
// before its row is readable. One more read shortly after the last trigger catches up.
const SETTLE_MS = 600;

/**
 * Loads `load()` now and again whenever `deps` change (pass the live counters a page depends
 * on). Answers are applied in order: a slow old request never overwrites a newer one.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const latest = useRef(0);
  const loader = useRef(load);
  loader.current = load;

  const run = useCallback(() => {
    const ticket = ++latest.current;
    loader
      .current()
      .then((value) => {
        if (ticket !== latest.current) return;
        setData(value);
        setError(undefined);
      })
      .catch((e: unknown) => {
        if (ticket !== latest.current) return;
        setError(e instanceof ApiError || e instanceof Error ? e.message : String(e));
      })
      .finally(() => {
        if (ticket === latest.current) setLoading(false);
      });
  }, []);

  useEffect(() => {
    run();
    const settle = setTimeout(run, SETTLE_MS);
    return () => clearTimeout(settle);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);

  return { data, error, loading, reload: run };
}
