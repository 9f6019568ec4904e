// Pause, resume, run now and delete, for the agents list and an agent's page alike. Answers go
// into the cache at once; the events that follow them change nothing more.
import { useState } from 'react';
import { agentsApi, type Agent, type ExecutionSummary } from '../api/agents';
import { dropAgent, putAgent, putExecution } from '../query/agentFrames';
import { queryClient } from '../query/client';
import { messageOf } from './errors';

export interface AgentActions {
  /** The agent an action is under way for. */
  busy: string | null;
  error: string | undefined;
  clearError: () => void;
  pause: (agent: Agent) => Promise<void>;
  resume: (agent: Agent) => Promise<void>;
  trigger: (agent: Agent) => Promise<ExecutionSummary | undefined>;
  /** Asks first; true when it was deleted. */
  remove: (agent: Agent) => Promise<boolean>;
}

export function useAgentActions(): AgentActions {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string>();

  const run = async <T,>(agent: Agent, what: string, action: () => Promise<T>): Promise<T | undefined> => {
    setBusy(agent.id);
    setError(undefined);
    try {
      return await action();
    } catch (e) {
      setError(`Could not ${what} ${agent.name}: ${messageOf(e)}`);
      return undefined;
    } finally {
      setBusy(null);
    }
  };

  return {
    busy,
    error,
    clearError: () => setError(undefined),
    pause: async (a) => {
      const saved = await run(a, 'pause', () => agentsApi.pause(a.id));
      if (saved) putAgent(queryClient, saved);
    },
    resume: async (a) => {
      const saved = await run(a, 'resume', () => agentsApi.resume(a.id));
      if (saved) putAgent(queryClient, saved);
    },
    trigger: async (a) => {
      const queued = await run(a, 'run', () => agentsApi.trigger(a.id));
      if (queued) putExecution(queryClient, queued);
      return queued;
    },
    remove: async (a) => {
      if (!window.confirm(`Delete ${a.name}? Its running work is cancelled and its history goes with it.`)) return false;
      const done = await run(a, 'delete', async () => {
        await agentsApi.remove(a.id);
        return true;
      });
      if (done) dropAgent(queryClient, a.id);
      return done === true;
    },
  };
}
