// Writes the live stream's rule and process frames into the query cache, so the rules and
// processes pages stay current without refetching per event. The listener is installed once,
// by the first of those pages to mount, and stays: data cached while a page was open keeps
// being patched after it closes, so reopening it shows the truth without a refetch.
import type { QueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import type { Rule } from '../api/client';
import type { ProcessRow } from '../api/tools';
import type { Frame } from '../lib/sse';
import { onFrame } from '../store/live';
import { keys, queryClient } from './client';

/** The service's evaluation order: deny before allow, higher priority first, older first. */
export function byEvaluationOrder(a: Rule, b: Rule): number {
  if (a.behavior !== b.behavior) return a.behavior === 'deny' ? -1 : 1;
  if (a.priority !== b.priority) return b.priority - a.priority;
  return a.created_at.localeCompare(b.created_at);
}

/** Newest first, as the API lists processes. */
function byNewest(a: ProcessRow, b: ProcessRow): number {
  return b.started_at.localeCompare(a.started_at);
}

function upsert<T extends { id: string }>(list: T[], item: T, order: (a: T, b: T) => number): T[] {
  const rest = list.filter((x) => x.id !== item.id);
  return [...rest, item].sort(order);
}

const isProjectRulesKey = (key: readonly unknown[]) => key.length === 3 && key[0] === 'projects' && key[2] === 'rules';

/** The cache key of the list a rule belongs in. */
export function rulesKeyOf(rule: Pick<Rule, 'project_id'>): readonly unknown[] {
  return rule.project_id ? keys.projectRules(rule.project_id) : keys.globalRules;
}

/** The cache key of the list a process belongs in (a session's, or its project folder's). */
export function processesKeyOf(row: Pick<ProcessRow, 'session_id' | 'project_id'>): readonly unknown[] {
  return row.session_id ? keys.processes('sessions', row.session_id) : keys.processes('projects', row.project_id);
}

/** Puts a rule (new or changed) in its cached list, in evaluation order. Lists not loaded stay unloaded. */
export function putRule(client: QueryClient, rule: Rule): void {
  client.setQueryData<Rule[]>(rulesKeyOf(rule), (list) => (list ? upsert(list, rule, byEvaluationOrder) : list));
}

export function dropRule(client: QueryClient, ruleId: string): void {
  const without = (list: Rule[] | undefined) => list?.filter((r) => r.id !== ruleId);
  client.setQueryData<Rule[]>(keys.globalRules, without);
  client.setQueriesData<Rule[]>({ predicate: (q) => isProjectRulesKey(q.queryKey) }, without);
}

export function putProcess(client: QueryClient, row: ProcessRow): void {
  client.setQueryData<ProcessRow[]>(processesKeyOf(row), (list) => (list ? upsert(list, row, byNewest) : list));
}

/**
 * Output chunks go only to a process's own topic today, but should one reach this stream, the
 * row's byte count follows it (the log itself is read from the log endpoints).
 */
function countOutput(client: QueryClient, frame: Frame & { process_id?: string | null }): void {
  const chunk = frame.data as { stream?: string; offset?: number; data?: string } | undefined;
  const id = frame.process_id;
  if (!id || !chunk || typeof chunk.offset !== 'number' || typeof chunk.data !== 'string') return;
  const end = chunk.offset + new TextEncoder().encode(chunk.data).length;
  const field = chunk.stream === 'stderr' ? 'stderr_bytes' : 'stdout_bytes';
  client.setQueriesData<ProcessRow[]>({ queryKey: ['processes'] }, (list) =>
    list?.map((row) => (row.id === id && row[field] < end ? { ...row, [field]: end } : row)),
  );
}

function isRow(data: unknown): data is { id: string } {
  return typeof data === 'object' && data !== null && typeof (data as { id?: unknown }).id === 'string';
}

/** Applies one frame to the cache (exported for tests). */
export function applyToolFrame(client: QueryClient, frame: Frame): void {
  if (frame.event === 'warning') {
    // Frames were dropped for this client: what is cached may be wrong in ways no frame will fix.
    void client.invalidateQueries({ queryKey: keys.globalRules });
    void client.invalidateQueries({ predicate: (q) => isProjectRulesKey(q.queryKey) });
    void client.invalidateQueries({ queryKey: ['processes'] });
    return;
  }
  if (frame.type === 'process.output') return countOutput(client, frame);
  const data = frame.data;
  if (!isRow(data)) return;
  switch (frame.type) {
    case 'rule.created':
    case 'rule.updated':
      putRule(client, data as Rule);
      break;
    case 'rule.deleted':
      dropRule(client, data.id);
      break;
    case 'process.started':
    case 'process.exited':
      putProcess(client, data as ProcessRow);
      break;
  }
}

let installed = false;

/** Starts patching the shared cache from the live stream (once; later calls do nothing). */
export function installToolFrames(): void {
  if (installed) return;
  installed = true;
  onFrame((frame) => applyToolFrame(queryClient, frame));
}

/** For the pages that read rules or processes: keeps their cache patched from the live stream. */
export function useToolFrames(): void {
  useEffect(installToolFrames, []);
}
