// The one TanStack Query cache for the whole app. Data comes from the REST API on first use
// and on reconnect; in between, the live event stream writes into this cache (see
// `src/store/live.ts`), so pages never refetch per event.
import { QueryClient } from '@tanstack/react-query';
import type { UsageQuery } from '../api/client';

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // The event stream keeps cached data fresh; a refetch happens only when invalidated
      // (reconnect, a `warning` about dropped events) or for data with no events.
      staleTime: Infinity,
      refetchOnWindowFocus: false,
      retry: 1,
    },
  },
});

/** Query keys, in one place so the live stream and the pages agree on them. */
export const keys = {
  health: ['health'] as const,
  projects: ['projects'] as const,
  project: (id: string) => ['projects', id] as const,
  projectSessions: (id: string) => ['projects', id, 'sessions'] as const,
  projectRules: (id: string) => ['projects', id, 'rules'] as const,
  globalRules: ['rules', 'global'] as const,
  session: (id: string) => ['sessions', id] as const,
  sessionOptions: (id: string) => ['sessions', id, 'options'] as const,
  /** What a live session's processes use (its `resources`), read again every few seconds. */
  sessionResources: (id: string) => ['sessions', id, 'resources'] as const,
  /**
   * A session's transcript: stored lines loaded so far plus lines heard live (lib/sessionFeed.ts).
   * Not under `['sessions']`: refreshing session lists must not read transcripts again.
   */
  sessionMessages: (id: string) => ['transcripts', id] as const,
  activeSessions: ['sessions', 'active'] as const,
  decisions: (filter: Record<string, string | number | undefined> = {}) => ['decisions', filter] as const,
  /**
   * The permission log page's paged (infinite) query. A root of its own: its cached value is
   * `{pages, pageParams}`, which code updating `['decisions', ...]` arrays must never meet.
   */
  permissionLog: (filter: { decision?: string; project_id?: string; session_id?: string }) =>
    ['permission-log', filter] as const,
  agents: ['agents'] as const,
  agent: (id: string) => ['agents', id] as const,
  agentExecutions: (id: string) => ['agents', id, 'executions'] as const,
  /** One run with its output (`GET /api/executions/{id}`). */
  execution: (id: string) => ['executions', id] as const,
  webhooks: ['webhooks'] as const,
  webhookDeliveries: (id: string) => ['webhooks', id, 'deliveries'] as const,
  locks: ['locks'] as const,
  processes: (scope: 'sessions' | 'projects', id: string) => ['processes', scope, id] as const,
  terminals: ['terminals'] as const,
  sessionTerminals: (sessionId: string) => ['terminals', { session_id: sessionId }] as const,
  diff: (sessionId: string) => ['sessions', sessionId, 'diff'] as const,
  /** One page of a session's diff (files from `offset`). */
  diffPage: (sessionId: string, offset: number) => ['sessions', sessionId, 'diff', offset] as const,
  /**
   * The cost ledger (`GET /api/usage`) for one query string. No event carries its sums: the
   * whole root is refetched when a turn's cost is stored (store/usageRefresh.ts).
   */
  usageAll: ['usage'] as const,
  usage: (query: UsageQuery) => ['usage', query] as const,
  /**
   * Each agent CLI's usage-limit state (`GET /api/usage/limits`). A root of its own: reading
   * the cost sums again (`usageAll`) must not read it too. Refetched on `usage.limit_*` frames.
   */
  usageLimits: ['usage-limits'] as const,
  /**
   * The last `usage.limit_reached` of a session (its queued turns), written by the session
   * page's frame listener; never fetched. Not under `['sessions']`: no refetch may touch it.
   */
  limitEvent: (sessionId: string) => ['limit-event', sessionId] as const,
  /**
   * A project's turns running and waiting for its `max_running_turns` (`GET /api/projects/{id}/turns`).
   * A root of its own: no event carries the line, it is read again on sessions' status frames
   * (store/usageRefresh.ts), and no patch of `['projects', ...]` may meet it.
   */
  projectTurns: (projectId: string) => ['turns', projectId] as const,
  /**
   * The last `session.turn_waiting` of a session (its place in its project's line), written by
   * the session page's frame listener until the turn starts; never fetched.
   */
  turnWaiting: (sessionId: string) => ['turn-waiting', sessionId] as const,
  /** The signed-in user's own sign-ins (`GET /api/auth/sessions`); no event carries them. */
  signIns: ['sign-ins'] as const,
  browse: (path: string) => ['folders', 'browse', path] as const,
  discover: (path: string) => ['folders', 'discover', path] as const,
};
