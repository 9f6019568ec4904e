// Scheduled agents, their runs and the runs' live output. Kept apart from `client.ts`'s `api`
// so the pages that use them own their calls (the shape still comes from the generated types).
import { call, type Schemas } from './client';

export type Agent = Schemas['AgentView'];
export type CreateAgent = Schemas['CreateAgent'];
export type UpdateAgent = Schemas['UpdateAgent'];
// A run a usage limit stopped (`waiting_for_limit`, until `resumes_at`) is written here as
// well as in the generated types, so this builds with an openapi.json from before the service
// had it; once the copy is refreshed both say the same and this adds nothing.
export type ExecutionStatus = Schemas['ExecutionStatus'] | 'waiting_for_limit';
type LimitFields = { status: ExecutionStatus; resumes_at?: string | null };
export type ExecutionSummary = Omit<Schemas['ExecutionSummary'], 'status'> & LimitFields;
export type Execution = Omit<Schemas['Execution'], 'status'> & LimitFields;
export type WorkspaceMode = Schemas['WorkspaceMode'];

const id = (value: string) => ({ id: value });

export const agentsApi = {
  list: () => call('get', '/api/agents', { query: { limit: 1000 } }),
  get: (agentId: string) => call('get', '/api/agents/{id}', { params: id(agentId) }),
  create: (body: CreateAgent) => call('post', '/api/agents', { body }),
  update: (agentId: string, body: UpdateAgent) => call('put', '/api/agents/{id}', { params: id(agentId), body }),
  remove: (agentId: string) => call('delete', '/api/agents/{id}', { params: id(agentId) }),
  pause: (agentId: string) => call('post', '/api/agents/{id}/pause', { params: id(agentId) }),
  resume: (agentId: string) => call('post', '/api/agents/{id}/resume', { params: id(agentId) }),
  trigger: (agentId: string) => call('post', '/api/agents/{id}/trigger', { params: id(agentId) }),
  /** The latest 100 runs are all the service keeps. */
  executions: (agentId: string) =>
    call('get', '/api/agents/{id}/executions', { params: id(agentId), query: { limit: 100 } }),
  execution: (executionId: string) => call('get', '/api/executions/{id}', { params: id(executionId) }),
  cancel: (executionId: string) => call('post', '/api/executions/{id}/cancel', { params: id(executionId) }),
};

/** Statuses of a run that has not ended yet (one waiting for a limit runs again by itself). */
export const LIVE_EXECUTION: readonly ExecutionStatus[] = ['queued', 'running', 'waiting_for_limit'];

export function isRunning(status: ExecutionStatus): boolean {
  return LIVE_EXECUTION.includes(status);
}
