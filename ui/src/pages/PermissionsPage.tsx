// The permission log: every tool call a rule or the default allowed or denied, newest first,
// filtered by decision, project and session, a page at a time; new decisions appear on top.
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router-dom';
import { api, type Decision } from '../api/client';
import { LOG_PAGE, permissionsApi, type DecisionFilter } from '../api/permissions';
import { PermissionLogRow } from '../components/PermissionLogRow';
import { Card, Empty, ErrorNote, Field, Loading } from '../components/ui';
import { messageOf } from '../lib/errors';
import { useRuleLookup } from '../lib/useRuleLookup';
import { keys } from '../query/client';
import './automation.css';

/** The filter lives in the address (`?decision=deny&project_id=…`), so a view can be linked. */
function useFilter(): [DecisionFilter, (change: Partial<Record<keyof DecisionFilter, string>>) => void] {
  const [search, setSearch] = useSearchParams();
  const decision = search.get('decision');
  const filter: DecisionFilter = {
    decision: decision === 'allow' || decision === 'deny' ? decision : undefined,
    project_id: search.get('project_id') || undefined,
    session_id: search.get('session_id') || undefined,
  };
  const change = (next: Partial<Record<keyof DecisionFilter, string>>) => {
    const merged = new URLSearchParams(search);
    for (const [k, v] of Object.entries(next)) {
      if (v) merged.set(k, v);
      else merged.delete(k);
    }
    setSearch(merged, { replace: true });
  };
  return [filter, change];
}

export function PermissionsPage() {
  const [filter, change] = useFilter();
  const log = useInfiniteQuery({
    queryKey: keys.permissionLog(filter),
    queryFn: ({ pageParam }) => permissionsApi.log(filter, pageParam),
    initialPageParam: 0,
    // The next page starts after every row held, those prepended live included (they are the
    // newest, so the service's offsets moved by as many).
    getNextPageParam: (last, pages) => (last.length < LOG_PAGE ? undefined : pages.reduce((n, p) => n + p.length, 0)),
  });
  const projects = useQuery({ queryKey: keys.projects, queryFn: api.projects });
  const rows = unique(log.data?.pages.flat() ?? []);
  const rules = useRuleLookup(rows);
  const projectName = (id: string | null | undefined) => projects.data?.find((p) => p.id === id)?.name;

  return (
    <div className="page" data-testid="permissions-page">
      <div className="page-head wrap">
        <div>
          <h1>Permission log</h1>
          <p className="description">Every tool call the agents asked to make, and what the rules decided.</p>
        </div>
      </div>
      <Filters filter={filter} change={change} projects={projects.data ?? []} />
      <Card title="Decisions" testId="permission-log">
        <ErrorNote error={log.error ? messageOf(log.error) : undefined} what="load the log" />
        {log.isPending && <Loading />}
        {log.data && rows.length === 0 && (
          <Empty title="No decision here.">{hasFilter(filter) ? 'Nothing matches this filter.' : 'Decisions appear as agents use tools.'}</Empty>
        )}
        <ul className="log" data-testid="permission-rows">
          {rows.map((d) => (
            <PermissionLogRow key={d.id} decision={d} rule={d.rule_id ? rules.get(d.rule_id) : undefined} projectName={projectName(d.project_id)} />
          ))}
        </ul>
        {log.hasNextPage && (
          <div className="load-more">
            <button className="button" data-testid="permission-load-more" disabled={log.isFetchingNextPage} onClick={() => log.fetchNextPage()}>
              {log.isFetchingNextPage ? 'Loading…' : 'Load more'}
            </button>
          </div>
        )}
      </Card>
    </div>
  );
}

function Filters(props: {
  filter: DecisionFilter;
  change: (c: Partial<Record<keyof DecisionFilter, string>>) => void;
  projects: { id: string; name: string }[];
}) {
  const { filter, change } = props;
  // The session id is applied when submitted, not at every key.
  const [session, setSession] = useState(filter.session_id ?? '');
  const applySession = (e: FormEvent) => {
    e.preventDefault();
    change({ session_id: session.trim() });
  };
  return (
    <form className="controls filters" onSubmit={applySession} data-testid="permission-filters">
      <Field label="Decision">
        <select name="decision" value={filter.decision ?? ''} onChange={(e) => change({ decision: e.target.value })}>
          <option value="">Any</option>
          <option value="allow">Allowed</option>
          <option value="deny">Denied</option>
        </select>
      </Field>
      <Field label="Project">
        <select name="project_id" value={filter.project_id ?? ''} onChange={(e) => change({ project_id: e.target.value })}>
          <option value="">All projects</option>
          {props.projects.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
          {filter.project_id && !props.projects.some((p) => p.id === filter.project_id) && <option value={filter.project_id}>{filter.project_id}</option>}
        </select>
      </Field>
      <Field label="Session id">
        <input name="session_id" className="mono" placeholder="any session" value={session} onChange={(e) => setSession(e.target.value)} onBlur={applySession} />
      </Field>
      {hasFilter(filter) && (
        <button
          type="button"
          className="button small ghost"
          onClick={() => {
            setSession('');
            change({ decision: '', project_id: '', session_id: '' });
          }}
        >
          Clear filters
        </button>
      )}
    </form>
  );
}

function hasFilter(f: DecisionFilter): boolean {
  return !!(f.decision || f.project_id || f.session_id);
}

/** Rows by id once (a decision could be both prepended live and in a page read after). */
function unique(rows: Decision[]): Decision[] {
  const seen = new Set<number>();
  return rows.filter((d) => (seen.has(d.id) ? false : (seen.add(d.id), true)));
}
