// Scheduled agents and their runs in the query cache: written from `agent.*` and
// `agent.execution.*` frames and from the answers of the pages' own calls.
import type { QueryClient } from '@tanstack/react-query';
import type { Agent, Execution, ExecutionSummary } from '../api/agents';
import type { Frame } from '../lib/sse';
import { keys } from './client';
import { byName, isRow, newestFirst, removeById, upsertById } from './rows';

/** The service keeps an agent's latest 100 runs; the history shows no more. */
const KEPT_RUNS = 100;

export function putAgent(client: QueryClient, row: Agent): void {
  const old = client.getQueryData<Agent>(keys.agent(row.id)) ??
    client.getQueryData<Agent[]>(keys.agents)?.find((a) => a.id === row.id);
  const agent = withFireTimes(row, old);
  client.setQueryData<Agent[]>(keys.agents, (list) => upsertById(list, agent, byName));
  client.setQueryData<Agent>(keys.agent(row.id), (current) => (current ? { ...current, ...agent } : agent));
}

export function dropAgent(client: QueryClient, agentId: string): void {
  client.setQueryData<Agent[]>(keys.agents, (list) => removeById(list, agentId));
  client.removeQueries({ queryKey: keys.agent(agentId), exact: true });
  client.removeQueries({ queryKey: keys.agentExecutions(agentId), exact: true });
}

/** A run as listings show it (and, merged, the run's own cached detail). */
export function putExecution(client: QueryClient, row: ExecutionSummary): void {
  client.setQueryData<ExecutionSummary[]>(keys.agentExecutions(row.agent_id), (list) =>
    upsertById(list, row, newestFirst((e) => e.created_at))?.slice(0, KEPT_RUNS),
  );
  // The detail keeps what a frame does not carry (the raw lines).
  client.setQueryData<Execution>(keys.execution(row.id), (current) => (current ? { ...current, ...row } : current));
}

/** Applies one frame of the global stream (or of a run's own stream); others pass by. */
export function applyAgentFrame(client: QueryClient, frame: Frame): void {
  const type = frame.type ?? '';
  const data = frame.data;
  if (type === 'agent.deleted') {
    if (isRow(data)) dropAgent(client, String(data.id));
  } else if (type === 'agent.created' || type === 'agent.updated') {
    if (isRow(data) && typeof data.name === 'string') putAgent(client, data as unknown as Agent);
  } else if (type.startsWith('agent.execution.') && type !== 'agent.execution.output') {
    if (isRow(data) && typeof data.agent_id === 'string' && typeof data.status === 'string') {
      putExecution(client, data as unknown as ExecutionSummary);
    }
  }
}

/**
 * An agent row from an event may come without its next fire times (they are computed for the
 * API's answers): keep the ones known while the schedule is the same, else have none (the
 * page then shows `next_run_at`).
 */
function withFireTimes(row: Agent, old: Agent | undefined): Agent {
  if (Array.isArray(row.next_fire_times)) return row;
  const keep = old && old.schedule === row.schedule ? old.next_fire_times : [];
  return { ...row, next_fire_times: keep };
}
