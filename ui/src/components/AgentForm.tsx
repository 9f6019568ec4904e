// Create or change a scheduled agent: every field of CreateAgent / UpdateAgent.
import { useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { agentsApi, type Agent } from '../api/agents';
import { api } from '../api/client';
import {
  AGENT_KINDS,
  checkAgentForm,
  createBody,
  EMPTY_AGENT_FORM,
  SCHEDULE_PRESETS,
  updateBody,
  valuesOf,
  type AgentFormErrors,
  type AgentFormValues,
} from '../lib/agentForm';
import { messageOf } from '../lib/errors';
import { putAgent } from '../query/agentFrames';
import { keys, queryClient } from '../query/client';
import { UsdField } from './BudgetFields';
import { ErrorNote, Field, FieldError, MODELS, Modal } from './ui';

export function AgentFormDialog(props: { agent?: Agent; onClose: () => void; onSaved: (agent: Agent) => void }) {
  const editing = props.agent !== undefined;
  const [values, setValues] = useState<AgentFormValues>(() => (props.agent ? valuesOf(props.agent) : EMPTY_AGENT_FORM));
  const [errors, setErrors] = useState<AgentFormErrors>({});
  const [apiError, setApiError] = useState<string>();
  const [saving, setSaving] = useState(false);
  const projects = useQuery({ queryKey: keys.projects, queryFn: api.projects });

  const set = <K extends keyof AgentFormValues>(field: K, value: AgentFormValues[K]) => {
    setValues((v) => ({ ...v, [field]: value }));
    setErrors((e) => ({ ...e, [field]: undefined }));
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const found = checkAgentForm(values, editing);
    setErrors(found);
    setApiError(undefined);
    if (Object.values(found).some(Boolean)) return;
    setSaving(true);
    try {
      let saved: Agent;
      if (props.agent) {
        const body = updateBody(values, props.agent);
        saved = Object.keys(body).length === 0 ? props.agent : await agentsApi.update(props.agent.id, body);
      } else {
        saved = await agentsApi.create(createBody(values));
      }
      putAgent(queryClient, saved);
      props.onSaved(saved);
    } catch (err) {
      setApiError(messageOf(err));
    } finally {
      setSaving(false);
    }
  };

  const projectName = projects.data?.find((p) => p.id === values.projectId)?.name;
  return (
    <Modal title={editing ? `Edit ${props.agent?.name}` : 'New scheduled agent'} onClose={props.onClose} wide>
      <form className="form scroll-form" onSubmit={submit} noValidate data-testid="agent-form">
        <Field label="Name">
          <input name="name" value={values.name} onChange={(e) => set('name', e.target.value)} aria-invalid={!!errors.name} autoFocus />
          <FieldError text={errors.name} />
        </Field>
        <Field label="Prompt" hint="The one message each run sends to the agent.">
          <textarea name="objective" rows={5} value={values.objective} onChange={(e) => set('objective', e.target.value)} aria-invalid={!!errors.objective} />
          <FieldError text={errors.objective} />
        </Field>
        <div className="form-row">
          <Field label="Schedule (cron, UTC)" hint="minute hour day-of-month month day-of-week">
            <input name="schedule" className="mono" value={values.schedule} onChange={(e) => set('schedule', e.target.value)} aria-invalid={!!errors.schedule} />
            <FieldError text={errors.schedule} />
          </Field>
          <Field label="Preset">
            <select aria-label="Schedule preset" value="" onChange={(e) => e.target.value && set('schedule', e.target.value)}>
              <option value="">Choose…</option>
              {SCHEDULE_PRESETS.map((p) => (
                <option key={p.cron} value={p.cron}>
                  {p.label}
                </option>
              ))}
            </select>
          </Field>
        </div>
        <div className="form-row">
          <Field label="Project" hint={editing ? 'An agent stays in the project it was created in.' : 'Its folder is the default folder.'}>
            {editing ? (
              <input value={projectName ?? (values.projectId || 'none')} disabled />
            ) : (
              <select name="project_id" value={values.projectId} onChange={(e) => set('projectId', e.target.value)}>
                <option value="">No project</option>
                {(projects.data ?? []).map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Folder" hint={editing ? 'Where runs work.' : "Empty: the project's folder."}>
            <input name="cwd" className="mono" value={values.cwd} onChange={(e) => set('cwd', e.target.value)} aria-invalid={!!errors.cwd} />
            <FieldError text={errors.cwd} />
          </Field>
        </div>
        <div className="form-row">
          <Field label="Agent" hint={editing ? undefined : "Empty: the project's default, else claude."}>
            <input name="agent" list="agent-kinds" value={values.agent} onChange={(e) => set('agent', e.target.value)} aria-invalid={!!errors.agent} />
            <FieldError text={errors.agent} />
          </Field>
          <Field label="Model" hint="Empty: the agent's default.">
            <input name="model" list="agent-models" value={values.model} onChange={(e) => set('model', e.target.value)} aria-invalid={!!errors.model} />
            <FieldError text={errors.model} />
          </Field>
          <Field label="Timeout (seconds)" hint="Default 300.">
            <input name="timeout" type="number" min={1} max={86400} value={values.timeoutSeconds} onChange={(e) => set('timeoutSeconds', e.target.value)} aria-invalid={!!errors.timeoutSeconds} />
            <FieldError text={errors.timeoutSeconds} />
          </Field>
          <Field label="Workspace">
            <select name="workspace_mode" value={values.workspaceMode} onChange={(e) => set('workspaceMode', e.target.value as AgentFormValues['workspaceMode'])}>
              {!editing && <option value="">Default (shared)</option>}
              <option value="shared">Shared folder</option>
              <option value="worktree">A git worktree per run</option>
            </select>
          </Field>
          <UsdField
            label="Cost cap per run (USD)"
            name="max_budget_usd"
            value={values.maxBudgetUsd}
            onChange={(v) => set('maxBudgetUsd', v)}
            error={errors.maxBudgetUsd}
            hint="Empty: no cap."
          />
        </div>
        <datalist id="agent-kinds">
          {AGENT_KINDS.map((k) => (
            <option key={k} value={k} />
          ))}
        </datalist>
        <datalist id="agent-models">
          {MODELS.map((m) => (
            <option key={m} value={m} />
          ))}
        </datalist>
        <ErrorNote error={apiError} what={editing ? 'save the agent' : 'create the agent'} />
        <div className="form-buttons">
          <button type="button" className="button ghost" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" className="button primary" disabled={saving} data-testid="agent-save">
            {saving ? 'Saving…' : editing ? 'Save' : 'Create agent'}
          </button>
        </div>
      </form>
    </Modal>
  );
}
