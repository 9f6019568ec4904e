// The scheduled agent form's values, their checks, and the bodies they become. The checks
// mirror the API's schema (CreateAgent / UpdateAgent) so most mistakes are caught before the
// call; the service's own answer is still shown for what only it can tell (a bad cron
// expression, a folder that is not a git repository for `worktree`, an unknown agent).
import type { Agent, CreateAgent, UpdateAgent, WorkspaceMode } from '../api/agents';
import { parseUsd, usdInput } from './budgets';

export interface AgentFormValues {
  name: string;
  objective: string;
  schedule: string;
  projectId: string;
  cwd: string;
  agent: string;
  model: string;
  /** Seconds, as typed. */
  timeoutSeconds: string;
  workspaceMode: '' | WorkspaceMode;
  /** The most one run may cost, in USD, as typed; empty: no cap. */
  maxBudgetUsd: string;
}

export type AgentFormErrors = Partial<Record<keyof AgentFormValues, string>>;

export const EMPTY_AGENT_FORM: AgentFormValues = {
  name: '',
  objective: '',
  schedule: '0 9 * * 1-5',
  projectId: '',
  cwd: '',
  agent: '',
  model: '',
  timeoutSeconds: '',
  workspaceMode: '',
  maxBudgetUsd: '',
};

export const AGENT_KINDS = ['claude', 'codex', 'gemini'];

export const SCHEDULE_PRESETS: { label: string; cron: string }[] = [
  { label: 'Every 15 minutes', cron: '*/15 * * * *' },
  { label: 'Every hour', cron: '0 * * * *' },
  { label: 'Every day at 09:00 UTC', cron: '0 9 * * *' },
  { label: 'Weekdays at 09:00 UTC', cron: '0 9 * * 1-5' },
  { label: 'Mondays at 06:00 UTC', cron: '0 6 * * 1' },
];

const AGENT_KIND = /^[a-z][a-z0-9_-]{0,31}$/;
const MODEL = /^[^\s-]\S*$/;
const CRON_FIELD = /^[0-9A-Za-z*?/,#LW-]+$/;

export function valuesOf(agent: Agent): AgentFormValues {
  return {
    name: agent.name,
    objective: agent.objective,
    schedule: agent.schedule,
    projectId: agent.project_id ?? '',
    cwd: agent.cwd,
    agent: agent.agent,
    model: agent.model ?? '',
    timeoutSeconds: String(agent.timeout_ms / 1000),
    workspaceMode: agent.workspace_mode,
    maxBudgetUsd: usdInput(agent.max_budget_usd),
  };
}

export function checkAgentForm(v: AgentFormValues, editing: boolean): AgentFormErrors {
  const errors: AgentFormErrors = {};
  const name = v.name.trim();
  if (!name) errors.name = 'Give it a name.';
  else if (name.length > 200) errors.name = 'At most 200 characters.';
  if (!v.objective.trim()) errors.objective = 'Say what each run should do.';
  const fields = v.schedule.trim().split(/\s+/).filter(Boolean);
  if (fields.length === 0) errors.schedule = 'A cron schedule is needed.';
  else if (fields.length < 5 || fields.length > 7 || !fields.every((f) => CRON_FIELD.test(f))) {
    errors.schedule = 'Five fields (minute hour day month weekday), or six/seven with seconds first.';
  } else if (v.schedule.trim().length > 200) errors.schedule = 'At most 200 characters.';
  if (v.cwd.length > 4096) errors.cwd = 'At most 4096 characters.';
  else if (editing && !v.cwd.trim()) errors.cwd = 'An agent keeps a folder: give one.';
  const kind = v.agent.trim();
  if (kind && !AGENT_KIND.test(kind)) errors.agent = 'Lowercase letters, digits, - and _ (e.g. claude).';
  else if (editing && !kind) errors.agent = 'Choose the agent its runs start.';
  const model = v.model.trim();
  if (model && (!MODEL.test(model) || model.length > 200)) errors.model = 'One word, not starting with “-”.';
  const timeout = v.timeoutSeconds.trim();
  if (timeout) {
    const s = Number(timeout);
    if (!Number.isFinite(s) || s < 1 || s > 86_400) errors.timeoutSeconds = 'Between 1 and 86400 seconds.';
  }
  const cap = parseUsd(v.maxBudgetUsd, 'cap');
  if (cap.error) errors.maxBudgetUsd = cap.error;
  return errors;
}

const timeoutMs = (v: AgentFormValues) => Math.round(Number(v.timeoutSeconds.trim()) * 1000);
/** Only for values `checkAgentForm` passed. */
const maxBudget = (v: AgentFormValues) => parseUsd(v.maxBudgetUsd, 'cap').value ?? null;

export function createBody(v: AgentFormValues): CreateAgent {
  const body: CreateAgent = { name: v.name.trim(), objective: v.objective, schedule: v.schedule.trim() };
  if (v.projectId) body.project_id = v.projectId;
  if (v.cwd.trim()) body.cwd = v.cwd.trim();
  if (v.agent.trim()) body.agent = v.agent.trim();
  if (v.model.trim()) body.model = v.model.trim();
  if (v.timeoutSeconds.trim()) body.timeout_ms = timeoutMs(v);
  if (v.workspaceMode) body.workspace_mode = v.workspaceMode;
  const cap = maxBudget(v);
  if (cap !== null) body.max_budget_usd = cap;
  return body;
}

/** Only what changed (the API's update is partial); an emptied model or cap clears it. */
export function updateBody(v: AgentFormValues, was: Agent): UpdateAgent {
  const body: UpdateAgent = {};
  if (v.name.trim() !== was.name) body.name = v.name.trim();
  if (v.objective !== was.objective) body.objective = v.objective;
  if (v.schedule.trim() !== was.schedule) body.schedule = v.schedule.trim();
  if (v.cwd.trim() !== was.cwd) body.cwd = v.cwd.trim();
  if (v.agent.trim() !== was.agent) body.agent = v.agent.trim();
  const model = v.model.trim() || null;
  if (model !== (was.model ?? null)) body.model = model;
  if (v.timeoutSeconds.trim() && timeoutMs(v) !== was.timeout_ms) body.timeout_ms = timeoutMs(v);
  if (v.workspaceMode && v.workspaceMode !== was.workspace_mode) body.workspace_mode = v.workspaceMode;
  const cap = maxBudget(v);
  if (cap !== (was.max_budget_usd ?? null)) body.max_budget_usd = cap;
  return body;
}
