// Writes the live stream into the query cache. Pages fetch once (first use, reconnect, a
// `warning` about dropped events) and never per event: each frame patches the cached lists
// from its contents (see `framePatches.ts`).
//
// An answer can be in flight while frames arrive: the server may have read its rows before
// those changes, and the answer would then overwrite the patched data with older rows. So
// frames are kept for a while in a journal, and `liveFetch` replays the ones that arrived
// during its request over its answer.
import type { QueryClient, QueryKey } from '@tanstack/react-query';
import type { Frame } from '../lib/sse';
import { effectsOf, type CacheEffects } from './framePatches';
import {
  cancelUsageRefresh, changesLimits, changesTurnsOf, refreshLimitsSoon, refreshTurnsSoon, refreshUsageSoon, storesUsage,
} from './usageRefresh';

interface Entry {
  n: number;
  at: number;
  effects: CacheEffects;
}

/** Long enough for any request; older frames cannot matter to one in flight. */
const JOURNAL_MS = 120_000;
const JOURNAL_MAX = 5_000;

let clock = 0;
let journal: Entry[] = [];

function record(effects: CacheEffects, now: number): void {
  journal.push({ n: ++clock, at: now, effects });
  const cut = journal.findIndex((e) => now - e.at < JOURNAL_MS);
  if (cut > 0) journal = journal.slice(cut);
  if (journal.length > JOURNAL_MAX) journal = journal.slice(journal.length - JOURNAL_MAX);
}

/** Applies one frame's effects to `client`. Returns whether it asked for a full refetch. */
export function applyFrameToCache(client: QueryClient, frame: Frame, now: number = Date.now()): boolean {
  // Before the patches below: the rule compares the frame's row with the cached one.
  if (storesUsage(client, frame)) refreshUsageSoon(client);
  if (changesLimits(frame)) refreshLimitsSoon(client);
  const turnsOf = changesTurnsOf(frame);
  if (turnsOf) refreshTurnsSoon(client, turnsOf);
  const effects = effectsOf(frame);
  if (effects.invalidateAll) {
    refetchEverything(client);
    return true;
  }
  if (effects.patches.length === 0 && effects.invalidate.length === 0) return false;
  record(effects, now);
  for (const query of client.getQueryCache().findAll()) {
    const key = query.queryKey;
    for (const patch of effects.patches) {
      if (!patch.matches(key)) continue;
      client.setQueryData(key, (old: unknown) => (old === undefined ? undefined : patch.update(old, key)));
    }
  }
  for (const key of effects.invalidate) void client.invalidateQueries({ queryKey: key });
  return false;
}

/**
 * Wraps a query function: the answer comes back with every frame that arrived during the
 * request applied over it.
 */
export function liveFetch<T>(key: QueryKey, fetcher: () => Promise<T>): () => Promise<T> {
  return async () => {
    await streamReady();
    const mark = clock;
    const data = await fetcher();
    return replaySince(mark, key, data);
  };
}

export function replaySince<T>(mark: number, key: QueryKey, data: T): T {
  let out: unknown = data;
  for (const entry of journal) {
    if (entry.n <= mark) continue;
    for (const patch of entry.effects.patches) if (patch.matches(key) && out !== undefined) out = patch.update(out, key);
  }
  return out as T;
}

/**
 * After a reconnect or dropped events: every query is refetched once (those on screen now,
 * the others when next shown), and queries that had failed start over without their old error.
 */
export function refetchEverything(client: QueryClient): void {
  void client.resetQueries({ predicate: (q) => q.state.status === 'error' });
  void client.invalidateQueries({ predicate: (q) => q.state.status !== 'error' });
}

// ---- the first connection ----------------------------------------------------------------
// Queries wait (briefly) for the stream's first answer, so nothing happens between a page's
// first reads and the moment the stream starts relaying: no change can fall in between.

let ready: Promise<void> = Promise.resolve();
let open: (() => void) | null = null;

/** Called once before the app renders (not in tests): queries wait for `streamOpened`. */
export function holdQueriesForStream(maxWaitMs = 2_000): void {
  ready = new Promise<void>((resolve) => {
    open = resolve;
    setTimeout(resolve, maxWaitMs);
  });
}

/** The stream answered (or failed): queries may go. */
export function streamOpened(): void {
  open?.();
  open = null;
}

export function streamReady(): Promise<void> {
  return ready;
}

/** For tests: forgets the journal and the usage reads that are due. */
export function resetJournal(): void {
  journal = [];
  cancelUsageRefresh();
}
