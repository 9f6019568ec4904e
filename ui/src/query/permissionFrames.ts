// The permission log's pages in the query cache: a `permission.decision` frame goes on top of
// every cached log whose filter it matches.
import type { InfiniteData, QueryClient } from '@tanstack/react-query';
import type { Decision } from '../api/client';
import { matchesFilter, type DecisionFilter } from '../api/permissions';
import type { Frame } from '../lib/sse';

export type LogPages = InfiniteData<Decision[], number>;

export function applyPermissionFrame(client: QueryClient, frame: Frame): void {
  if (frame.type !== 'permission.decision') return;
  const d = frame.data as Decision | undefined;
  if (!d || typeof d.id !== 'number' || typeof d.tool_name !== 'string') return;
  for (const [key, value] of client.getQueriesData<LogPages>({ queryKey: ['permission-log'] })) {
    const filter = (key[1] ?? {}) as DecisionFilter;
    if (!value || !matchesFilter(d, filter)) continue;
    if (value.pages.some((page) => page.some((row) => row.id === d.id))) continue;
    const [first = [], ...rest] = value.pages;
    client.setQueryData<LogPages>(key, { ...value, pages: [[d, ...first], ...rest] });
  }
}
