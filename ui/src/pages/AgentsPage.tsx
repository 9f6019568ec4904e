// Scheduled agents: every agent with its schedule and next run, and what can be done to it.
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router-dom';
import { agentsApi, type Agent } from '../api/agents';
import { api } from '../api/client';
import { AgentFormDialog } from '../components/AgentForm';
import { AgentStatusBadge, NextRun } from '../components/AgentStatus';
import { Card, Empty, ErrorNote, Loading } from '../components/ui';
import { messageOf } from '../lib/errors';
import { useAgentActions, type AgentActions } from '../lib/useAgentActions';
import { keys } from '../query/client';
import './automation.css';

export function AgentsPage() {
  const agents = useQuery({ queryKey: keys.agents, queryFn: agentsApi.list });
  const projects = useQuery({ queryKey: keys.projects, queryFn: api.projects });
  const [dialog, setDialog] = useState<{ edit?: Agent } | null>(null);
  const actions = useAgentActions();
  const navigate = useNavigate();
  const projectName = (id: string | null | undefined) => (id ? projects.data?.find((p) => p.id === id)?.name ?? 'a project' : null);

  const runNow = async (agent: Agent) => {
    const queued = await actions.trigger(agent);
    // The state says the run was started here: its page follows its stream even if it has ended.
    if (queued) navigate(`/agents/${agent.id}?run=${queued.id}`, { state: { started: queued.id } });
  };

  return (
    <div className="page" data-testid="agents-page">
      <div className="page-head wrap">
        <div>
          <h1>Scheduled agents</h1>
          <p className="description">Prompts that run unattended on a cron schedule, each in its own agent CLI.</p>
        </div>
        <button className="button primary" data-testid="agent-new" onClick={() => setDialog({})}>
          New agent
        </button>
      </div>
      <ErrorNote error={actions.error} />
      <Card title="Agents">
        <ErrorNote error={agents.error ? messageOf(agents.error) : undefined} what="load the agents" />
        {agents.isPending && <Loading />}
        {agents.data?.length === 0 && (
          <Empty title="No scheduled agent yet.">Create one to run a prompt every hour, every morning, or on any cron schedule.</Empty>
        )}
        {agents.data && agents.data.length > 0 && (
          <ul className="stack-list" data-testid="agent-list">
            {agents.data.map((a) => (
              <AgentRow
                key={a.id}
                agent={a}
                project={projectName(a.project_id)}
                actions={actions}
                onEdit={() => setDialog({ edit: a })}
                onRunNow={() => runNow(a)}
              />
            ))}
          </ul>
        )}
      </Card>
      {dialog && (
        <AgentFormDialog
          agent={dialog.edit}
          onClose={() => setDialog(null)}
          onSaved={(saved) => {
            setDialog(null);
            if (!dialog.edit) navigate(`/agents/${saved.id}`);
          }}
        />
      )}
    </div>
  );
}

function AgentRow(props: { agent: Agent; project: string | null; actions: AgentActions; onEdit: () => void; onRunNow: () => void }) {
  const { agent: a, actions } = props;
  const busy = actions.busy === a.id;
  return (
    <li className="stack-row" data-testid="agent-row" data-agent-id={a.id}>
      <div className="stack-main">
        <div className="stack-title">
          <Link to={`/agents/${a.id}`} className="strong">
            {a.name}
          </Link>
          <AgentStatusBadge status={a.status} />
          {a.consecutive_failures > 0 && <span className="small tool-error">{a.consecutive_failures} failed in a row</span>}
        </div>
        <div className="stack-facts small muted">
          <code className="subject">{a.schedule}</code>
          <span>
            next: <NextRun agent={a} />
          </span>
          <span>
            {a.agent}
            {a.model ? ` · ${a.model}` : ''}
          </span>
          {props.project && <span>{props.project}</span>}
        </div>
        <div className="small muted clamp" title={a.objective}>
          {a.objective}
        </div>
      </div>
      <div className="stack-actions">
        <button className="button small primary" data-testid="agent-trigger" disabled={busy} onClick={props.onRunNow}>
          Run now
        </button>
        {a.status === 'active' ? (
          <button className="button small" data-testid="agent-pause" disabled={busy} onClick={() => actions.pause(a)}>
            Pause
          </button>
        ) : (
          <button className="button small" data-testid="agent-resume" disabled={busy} onClick={() => actions.resume(a)}>
            Resume
          </button>
        )}
        <button className="button small" data-testid="agent-edit" disabled={busy} onClick={props.onEdit}>
          Edit
        </button>
        <button className="button small danger-ghost" data-testid="agent-delete" disabled={busy} onClick={() => actions.remove(a)}>
          Delete
        </button>
      </div>
    </li>
  );
}
