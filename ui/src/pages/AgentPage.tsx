// One scheduled agent: its settings, its run history, and a run's output (live while it runs).
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation, useNavigate, useParams, useSearchParams } from 'react-router-dom';
import { agentsApi, type Agent } from '../api/agents';
import { api, ApiError } from '../api/client';
import { AgentFormDialog } from '../components/AgentForm';
import { AgentStatusBadge, NextRun, until, upcoming } from '../components/AgentStatus';
import { ExecutionOutput } from '../components/ExecutionOutput';
import { ExecutionsTable } from '../components/ExecutionsTable';
import { Card, Empty, ErrorNote, Loading } from '../components/ui';
import { messageOf } from '../lib/errors';
import { usd } from '../lib/format';
import { useAgentActions } from '../lib/useAgentActions';
import { keys, queryClient } from '../query/client';
import './automation.css';

export function AgentPage() {
  const { agentId = '' } = useParams();
  const [search, setSearch] = useSearchParams();
  const navigate = useNavigate();
  const selected = search.get('run');
  // The run "Run now" started (here or on the list): followed from its start, however fast it ends.
  const started = (useLocation().state as { started?: string } | null)?.started;
  const agent = useQuery({
    queryKey: keys.agent(agentId),
    queryFn: () => agentsApi.get(agentId),
    // The list, when loaded, already holds it (and is kept current by the same events).
    initialData: () => queryClient.getQueryData<Agent[]>(keys.agents)?.find((a) => a.id === agentId),
  });
  const runs = useQuery({ queryKey: keys.agentExecutions(agentId), queryFn: () => agentsApi.executions(agentId) });
  const actions = useAgentActions();
  const [editing, setEditing] = useState(false);
  const open = (runId: string | null) => setSearch(runId ? { run: runId } : {}, { replace: true });

  if (agent.error instanceof ApiError && agent.error.status === 404) {
    return (
      <Empty title="There is no such agent.">
        It may have been deleted. <Link to="/agents">All scheduled agents</Link>
      </Empty>
    );
  }
  const a = agent.data;
  if (!a) {
    return (
      <div className="page">
        <ErrorNote error={agent.error ? messageOf(agent.error) : undefined} what="load the agent" />
        {agent.isPending && <Loading />}
      </div>
    );
  }
  const busy = actions.busy === a.id;
  const runNow = async () => {
    const queued = await actions.trigger(a);
    if (queued) setSearch({ run: queued.id }, { replace: true, state: { started: queued.id } });
  };

  return (
    <div className="page" data-testid="agent-page">
      <div className="page-head wrap">
        <div className="min0">
          <div className="crumbs">
            <Link to="/agents">Scheduled agents</Link>
          </div>
          <h1 className="wrap-title">
            {a.name} <AgentStatusBadge status={a.status} />
          </h1>
          <p className="description">
            <code>{a.schedule}</code> · next <NextRun agent={a} />
          </p>
        </div>
        <div className="head-actions">
          <button className="button primary" data-testid="agent-trigger" disabled={busy} onClick={runNow}>
            Run now
          </button>
          {a.status === 'active' ? (
            <button className="button" data-testid="agent-pause" disabled={busy} onClick={() => actions.pause(a)}>
              Pause
            </button>
          ) : (
            <button className="button" data-testid="agent-resume" disabled={busy} onClick={() => actions.resume(a)}>
              Resume
            </button>
          )}
          <button className="button" data-testid="agent-edit" onClick={() => setEditing(true)}>
            Edit
          </button>
          <button
            className="button danger-ghost"
            data-testid="agent-delete"
            disabled={busy}
            onClick={async () => {
              if (await actions.remove(a)) navigate('/agents');
            }}
          >
            Delete
          </button>
        </div>
      </div>
      <ErrorNote error={actions.error} />
      {a.status === 'error' && (
        <div className="error-note">
          It stopped firing after {a.consecutive_failures} failed runs in a row. Resume it to fire on schedule again.
        </div>
      )}
      <div className="grid two">
        <Card title="Settings">
          <AgentFacts agent={a} />
        </Card>
        <Card title="Prompt">
          <div className="prompt-text" data-testid="agent-objective">
            {a.objective}
          </div>
        </Card>
      </div>
      {selected && <ExecutionOutput key={selected} executionId={selected} follow={selected === started} onClose={() => open(null)} />}
      <Card title="Runs" testId="agent-runs">
        <ErrorNote error={runs.error ? messageOf(runs.error) : undefined} what="load the runs" />
        {runs.isPending && <Loading />}
        {runs.data && <ExecutionsTable executions={runs.data} selected={selected} onOpen={open} />}
      </Card>
      {editing && <AgentFormDialog agent={a} onClose={() => setEditing(false)} onSaved={() => setEditing(false)} />}
    </div>
  );
}

function AgentFacts({ agent: a }: { agent: Agent }) {
  const projects = useQuery({ queryKey: keys.projects, queryFn: api.projects });
  const project = a.project_id ? projects.data?.find((p) => p.id === a.project_id) : undefined;
  const next = upcoming(a);
  return (
    <dl className="facts">
      <div>
        <dt>Next runs (UTC schedule)</dt>
        <dd data-testid="agent-next-runs">
          {a.status !== 'active' || next.length === 0
            ? '—'
            : next.map((t) => (
                <div key={t}>
                  {new Date(t).toLocaleString()} <span className="muted">({until(t)})</span>
                </div>
              ))}
        </dd>
      </div>
      <div>
        <dt>Project</dt>
        <dd>{a.project_id ? project ? <Link to={`/projects/${project.id}`}>{project.name}</Link> : a.project_id : 'none'}</dd>
      </div>
      <div>
        <dt>Folder</dt>
        <dd className="mono break">{a.cwd}</dd>
      </div>
      <div>
        <dt>Agent</dt>
        <dd>
          {a.agent}
          {a.model ? ` · ${a.model}` : ''}
        </dd>
      </div>
      <div>
        <dt>Timeout</dt>
        <dd>{a.timeout_ms / 1000} s</dd>
      </div>
      <div>
        <dt>Workspace</dt>
        <dd>{a.workspace_mode === 'worktree' ? 'a git worktree per run' : 'shared folder'}</dd>
      </div>
      <div>
        <dt>Cost cap per run</dt>
        <dd data-testid="agent-cap">{a.max_budget_usd != null ? usd(a.max_budget_usd) : 'none'}</dd>
      </div>
      <div>
        <dt>Failures in a row</dt>
        <dd>{a.consecutive_failures}</dd>
      </div>
    </dl>
  );
}
