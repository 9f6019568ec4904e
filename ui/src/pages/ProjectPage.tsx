import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { useNavigate, useParams } from 'react-router-dom';
import { api, type PermissionMode, type Project } from '../api/client';
import { Card, Empty, ErrorNote, Field, Loading, MODELS, Modal, PERMISSION_MODES } from '../components/ui';
import { UsdField } from '../components/BudgetFields';
import { ProjectBudget } from '../components/ProjectBudget';
import { ProjectLimitFields, useProjectLimits } from '../components/ProjectLimitFields';
import { RulesEditor } from '../components/RulesEditor';
import { TurnQueueCard } from '../components/TurnQueueCard';
import { SessionsTable } from '../components/SessionsTable';
import { parseUsd } from '../lib/budgets';
import { messageOf } from '../lib/errors';
import { limitChanges, limitValuesOf } from '../lib/projectLimits';
import { changed } from '../query/localChanges';
import { projectQuery, projectSessionsQuery } from '../query/queries';

export function ProjectPage() {
  const { projectId = '' } = useParams();
  const project = useQuery(projectQuery(projectId));
  const sessions = useQuery(projectSessionsQuery(projectId));
  const [launching, setLaunching] = useState(false);

  if (project.isPending) return <Loading />;
  if (!project.data) return <ErrorNote error={project.error?.message ?? 'This project does not exist.'} what="open this project" />;
  const p = project.data;
  return (
    <div className="page">
      <div className="page-head">
        <div>
          <h1>{p.name}</h1>
          <div className="muted mono small">{p.folder_path}</div>
          {p.description && <p className="description">{p.description}</p>}
        </div>
        <button className="button primary" onClick={() => setLaunching(true)}>
          New session
        </button>
      </div>
      <ProjectBudget project={p} />
      <TurnQueueCard project={p} sessions={sessions.data} />
      <Card title="Sessions" testId="project-sessions">
        {sessions.isPending && <Loading />}
        <ErrorNote error={sessions.error?.message} what="load sessions" />
        {sessions.data && sessions.data.length === 0 && (
          <Empty title="No sessions yet.">Start one with “New session”: it runs Claude Code in {p.folder_path}.</Empty>
        )}
        {sessions.data && sessions.data.length > 0 && <SessionsTable sessions={sessions.data} />}
      </Card>
      <div className="grid two">
        <Card title="Permission rules for this project">
          <RulesEditor projectId={p.id} />
        </Card>
        <Card title="Settings">
          {/* Keyed: the form's fields start from the project shown, also after switching projects. */}
          <SettingsForm key={p.id} project={p} />
        </Card>
      </div>
      {launching && <NewSessionDialog project={p} onClose={() => setLaunching(false)} />}
    </div>
  );
}

/** Launches a session; an initial prompt is sent as its first turn (it waits until the CLI is ready). */
function NewSessionDialog({ project, onClose }: { project: Project; onClose: () => void }) {
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const [model, setModel] = useState(project.default_model ?? '');
  const [mode, setMode] = useState<string>(project.default_permission_mode ?? '');
  const [prompt, setPrompt] = useState('');
  const [cap, setCap] = useState('');
  const [capError, setCapError] = useState<string>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const maxBudget = parseUsd(cap, 'cap');
    setCapError(maxBudget.error);
    if (maxBudget.error) return;
    setBusy(true);
    try {
      const session = await api.launch(project.id, {
        name: name || null,
        model: model || null,
        permission_mode: (mode || null) as PermissionMode | null,
        ...(maxBudget.value !== null && { max_budget_usd: maxBudget.value }),
      });
      changed.session(session);
      if (prompt.trim()) await api.send(session.id, prompt);
      navigate(`/sessions/${session.id}`);
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  };
  return (
    <Modal title={`New session in ${project.name}`} onClose={onClose}>
      <form className="form" onSubmit={submit}>
        <Field label="Name (optional)" hint="A friendly two-word name is picked when empty.">
          <input value={name} onChange={(e) => setName(e.target.value)} />
        </Field>
        <div className="form-row">
          <Field label="Model">
            <input value={model} onChange={(e) => setModel(e.target.value)} list="models" placeholder="CLI default" />
            <datalist id="models">
              {MODELS.map((m) => (
                <option key={m} value={m} />
              ))}
            </datalist>
          </Field>
          <Field label="Permission mode">
            <select value={mode} onChange={(e) => setMode(e.target.value)}>
              <option value="">project default</option>
              {PERMISSION_MODES.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </Field>
        </div>
        <UsdField
          label="Cost cap (USD, optional)"
          name="max_budget_usd"
          value={cap}
          onChange={(v) => {
            setCap(v);
            setCapError(undefined);
          }}
          error={capError}
          hint="The most this session may cost, across resumes: it is paused once reached. Empty: no cap of its own."
        />
        <Field label="First message (optional)">
          <textarea value={prompt} onChange={(e) => setPrompt(e.target.value)} rows={4} placeholder="What should Claude do?" />
        </Field>
        <ErrorNote error={error} what="start the session" />
        <div className="form-buttons">
          <button type="button" className="button ghost" onClick={onClose}>
            Cancel
          </button>
          <button className="button primary" disabled={busy}>
            {busy ? 'Starting…' : 'Start session'}
          </button>
        </div>
      </form>
    </Modal>
  );
}

function SettingsForm({ project }: { project: Project }) {
  const navigate = useNavigate();
  const [name, setName] = useState(project.name);
  const [description, setDescription] = useState(project.description ?? '');
  const [model, setModel] = useState(project.default_model ?? '');
  const [mode, setMode] = useState(project.default_permission_mode ?? '');
  const [maxSessions, setMaxSessions] = useState(String(project.max_sessions));
  const [systemPrompt, setSystemPrompt] = useState(project.default_append_system_prompt ?? '');
  const limits = useProjectLimits(() => limitValuesOf(project));
  const [note, setNote] = useState<string>();
  const [error, setError] = useState<string>();
  const save = async (e: FormEvent) => {
    e.preventDefault();
    if (!limits.check()) {
      setNote(undefined);
      return;
    }
    try {
      const saved = await api.updateProject(project.id, {
        name,
        description: description || null,
        default_model: model || null,
        default_permission_mode: (mode || null) as PermissionMode | null,
        max_sessions: Number(maxSessions),
        default_append_system_prompt: systemPrompt || null,
        ...limitChanges(limits.values, project),
      });
      changed.project(saved);
      setError(undefined);
      setNote('Saved.');
    } catch (err) {
      setNote(undefined);
      setError(messageOf(err));
    }
  };
  const remove = async () => {
    if (!window.confirm(`Delete ${project.name}? Its live sessions are ended and its history is erased.`)) return;
    try {
      await api.deleteProject(project.id);
      navigate('/');
      changed.projectDeleted(project.id);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <form className="form" onSubmit={save} data-testid="project-settings">
      <Field label="Name">
        <input value={name} onChange={(e) => setName(e.target.value)} required />
      </Field>
      <Field label="Description">
        <input value={description} onChange={(e) => setDescription(e.target.value)} />
      </Field>
      <div className="form-row">
        <Field label="Default model">
          <input value={model} onChange={(e) => setModel(e.target.value)} list="models" placeholder="CLI default" />
        </Field>
        <Field label="Default mode">
          <select value={mode} onChange={(e) => setMode(e.target.value)}>
            <option value="">CLI default</option>
            {PERMISSION_MODES.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </Field>
        <Field label="Max live sessions">
          <input type="number" min={1} max={1000} value={maxSessions} onChange={(e) => setMaxSessions(e.target.value)} />
        </Field>
      </div>
      <Field label="Appended system prompt" hint="Added to Claude Code's own system prompt in new sessions.">
        <textarea rows={2} value={systemPrompt} onChange={(e) => setSystemPrompt(e.target.value)} />
      </Field>
      <ProjectLimitFields limits={limits} />
      <ErrorNote error={error} what="save" />
      <div className="form-buttons">
        {note && <span className="saved">{note}</span>}
        <button type="button" className="button danger-ghost" onClick={remove}>
          Delete project
        </button>
        <button className="button primary">Save settings</button>
      </div>
    </form>
  );
}
