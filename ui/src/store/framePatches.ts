// What one frame of the live stream changes in the query cache, as pure functions. The same
// patches are applied to the cache when a frame arrives and replayed over an answer that was in
// flight meanwhile (see `cacheSync.ts`), so they must be idempotent: applying one twice, or to
// data that already holds its change, changes nothing.
import { hashKey, type QueryKey } from '@tanstack/react-query';
import type { Decision, Project, Rule, Session } from '../api/client';
import type { Frame } from '../lib/sse';
import { isLive } from '../lib/format';
import { keys } from '../query/client';

export interface CachePatch {
  matches: (key: QueryKey) => boolean;
  /** The new data from the cached data (never called without data); `old` itself when unchanged. */
  update: (old: unknown, key: QueryKey) => unknown;
}

export interface CacheEffects {
  patches: CachePatch[];
  /** Queries to mark stale (refetched only if a page shows them): what events cannot patch. */
  invalidate: QueryKey[];
  /** The client missed events: everything is refetched. */
  invalidateAll?: boolean;
}

const none: CacheEffects = { patches: [], invalidate: [] };

interface Row {
  id: string;
}

const sameKey = (a: QueryKey) => {
  const hash = hashKey(a);
  return (b: QueryKey) => hashKey(b) === hash;
};

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function hasId(v: unknown): v is Row & Record<string, unknown> {
  return isRecord(v) && typeof v.id === 'string';
}

// Row shapes are checked by a few fields: enough to tell a row from `{"id"}` or another event's data.
export function isSessionRow(v: unknown): v is Session {
  return hasId(v) && typeof v.project_id === 'string' && typeof v.status === 'string';
}

function isProjectRow(v: unknown): v is Project {
  return hasId(v) && typeof v.name === 'string' && typeof v.folder_path === 'string';
}

function isRuleRow(v: unknown): v is Rule {
  return hasId(v) && typeof v.tool_name === 'string' && typeof v.behavior === 'string';
}

// ---- list helpers: each returns `list` itself when nothing changes --------------------------

/** Replaces the row with `row.id` in place; adds it (first or last) when absent. */
export function upsert<T extends Row>(list: T[], row: T, where: 'first' | 'last', merge = false): T[] {
  const i = list.findIndex((r) => r.id === row.id);
  if (i < 0) return where === 'first' ? [row, ...list] : [...list, row];
  const next = merge ? { ...list[i], ...row } : row;
  const copy = [...list];
  copy[i] = next;
  return copy;
}

export function removeId<T extends Row>(list: T[], id: string): T[] {
  return list.some((r) => r.id === id) ? list.filter((r) => r.id !== id) : list;
}

const asList = <T,>(old: unknown): T[] | null => (Array.isArray(old) ? (old as T[]) : null);

function listPatch<T extends Row>(matches: (key: QueryKey) => boolean, change: (list: T[]) => T[]): CachePatch {
  return {
    matches,
    update: (old) => {
      const list = asList<T>(old);
      return list ? change(list) : old;
    },
  };
}

/** Rules in the order the engine evaluates them: deny before allow, higher priority, older. */
export function sortRules(rules: Rule[]): Rule[] {
  return [...rules].sort(
    (a, b) =>
      (a.behavior === b.behavior ? 0 : a.behavior === 'deny' ? -1 : 1) ||
      b.priority - a.priority ||
      a.created_at.localeCompare(b.created_at),
  );
}

const isRulesList = (key: QueryKey) =>
  (key[0] === 'rules' && key[1] === 'global') || (key[0] === 'projects' && key.length === 3 && key[2] === 'rules');

// ---- per kind -------------------------------------------------------------------------------

function sessionPatches(row: Session): CachePatch[] {
  return [
    { matches: sameKey(keys.session(row.id)), update: () => row },
    // A project's sessions come newest first: a new one goes on top.
    listPatch<Session>(sameKey(keys.projectSessions(row.project_id)), (list) => upsert(list, row, 'first')),
    listPatch<Session>(sameKey(keys.activeSessions), (list) =>
      isLive(row.status) ? upsert(list, row, 'last') : removeId(list, row.id),
    ),
  ];
}

function projectEffects(kind: string, data: unknown): CacheEffects {
  if (kind === 'deleted') {
    if (!hasId(data)) return none;
    return {
      patches: [
        listPatch<Project>(sameKey(keys.projects), (list) => removeId(list, data.id)),
        listPatch<Session>(sameKey(keys.activeSessions), (list) =>
          list.some((s) => s.project_id === data.id) ? list.filter((s) => s.project_id !== data.id) : list,
        ),
      ],
      invalidate: [keys.project(data.id)],
    };
  }
  if (!isProjectRow(data)) return { patches: [], invalidate: [keys.projects] };
  return {
    patches: [
      listPatch<Project>(sameKey(keys.projects), (list) => upsert(list, data, 'last')),
      { matches: sameKey(keys.project(data.id)), update: () => data },
    ],
    invalidate: [],
  };
}

function ruleEffects(kind: string, data: unknown): CacheEffects {
  if (kind === 'deleted') {
    return hasId(data) ? { patches: [listPatch<Rule>(isRulesList, (list) => removeId(list, data.id))], invalidate: [] } : none;
  }
  if (!isRuleRow(data)) return { patches: [], invalidate: [['rules'], ['projects']] };
  const key = data.project_id ? keys.projectRules(data.project_id) : keys.globalRules;
  return {
    patches: [
      listPatch<Rule>(sameKey(key), (list) => {
        const next = upsert(list, data, 'last');
        return next === list ? list : sortRules(next);
      }),
    ],
    invalidate: [],
  };
}

/**
 * The decision from a `permission.decision` frame. The event is sent before the row is
 * stored, so it may have no `id`: it gets a negative one from the frame's sequence, and it is
 * recognised later by its request id and time.
 */
export function decisionFromFrame(frame: Frame): Decision | null {
  const d = frame.data;
  if (!isRecord(d) || typeof d.tool_name !== 'string' || typeof d.decision !== 'string') return null;
  const id = typeof d.id === 'number' ? d.id : -(frame.seq ?? Date.now());
  return { ...(d as unknown as Decision), id, session_id: (d.session_id as string | null | undefined) ?? frame.session_id ?? null };
}

const sameDecision = (a: Decision, b: Decision) =>
  (a.id > 0 && a.id === b.id) || (a.request_id === b.request_id && a.decided_at === b.decided_at && a.tool_name === b.tool_name);

/** Whether a decisions query (`keys.decisions(filter)`) lists `d`, on its first page. */
function decisionFits(filter: unknown, d: Decision): boolean {
  if (!isRecord(filter)) return true;
  if (filter.offset !== undefined && Number(filter.offset) > 0) return false;
  if (filter.session_id !== undefined && filter.session_id !== d.session_id) return false;
  if (filter.project_id !== undefined && filter.project_id !== d.project_id) return false;
  if (filter.decision !== undefined && filter.decision !== d.decision) return false;
  return true;
}

/** A query's `limit`: the list stays as long as the API would have answered. */
function limitOf(filter: unknown): number | undefined {
  return isRecord(filter) && typeof filter.limit === 'number' ? filter.limit : undefined;
}

function decisionEffects(frame: Frame): CacheEffects {
  const d = decisionFromFrame(frame);
  if (!d) return none;
  return {
    patches: [
      {
        matches: (key) => key[0] === 'decisions' && decisionFits(key[1], d),
        update: (old, key) => {
          const list = asList<Decision>(old);
          if (!list || list.some((x) => sameDecision(x, d))) return old;
          return [d, ...list].slice(0, limitOf(key[1]));
        },
      },
    ],
    invalidate: [],
  };
}

/** Everything a frame changes in the cache. Partial tokens change nothing. */
export function effectsOf(frame: Frame): CacheEffects {
  if (frame.event === 'warning') return { patches: [], invalidate: [], invalidateAll: true };
  const type = frame.type ?? '';
  const [scope, kind = ''] = splitType(type);
  switch (scope) {
    case 'session':
      // `session.error` may carry only `{"message"}`: the `session.closed` that follows has the row.
      return isSessionRow(frame.data) ? { patches: sessionPatches(frame.data), invalidate: [] } : none;
    case 'project':
      return projectEffects(kind, frame.data);
    case 'rule':
      return ruleEffects(kind, frame.data);
    // Scheduled agents and webhooks: their pages' own handlers (query/agentFrames.ts,
    // query/webhookFrames.ts) keep their lists, with the fields only they know how to keep.
    case 'permission':
      return kind === 'decision' ? decisionEffects(frame) : none;
    default:
      return none;
  }
}

function splitType(type: string): [string, string] {
  const dot = type.indexOf('.');
  return dot < 0 ? [type, ''] : [type.slice(0, dot), type.slice(dot + 1)];
}
