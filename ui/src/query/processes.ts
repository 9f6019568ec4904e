// A project folder's or a session's commands and background processes, from the query cache:
// loaded once, then kept current by the `process.started|exited` frames (toolFrames.ts). The
// API's answers to this page's own actions go into the cache at once as well.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { tools, type ProcessRow, type ProcessScope } from '../api/tools';
import { keys } from './client';
import { putProcess, useToolFrames } from './toolFrames';

export function useProcesses(scope: ProcessScope, ownerId: string) {
  useToolFrames();
  return useQuery({ queryKey: keys.processes(scope, ownerId), queryFn: () => tools.processes(scope, ownerId) });
}

/** Each action resolves with what to tell the user, or throws the API's error. */
export function useProcessActions(scope: ProcessScope, ownerId: string) {
  const client = useQueryClient();
  const key = keys.processes(scope, ownerId);
  return {
    start: async (command: string, cwd: string) => {
      const row = await tools.startProcess(scope, ownerId, { command, cwd: cwd.trim() || null });
      putProcess(client, row);
      return row;
    },
    kill: async (row: ProcessRow) => {
      // The answer is the row as it was (still running): its `process.exited` frame follows.
      await tools.killProcess(scope, ownerId, row.id);
      return `Ending ${row.command}…`;
    },
    killAll: async () => {
      const { count } = await tools.killAllProcesses(scope, ownerId);
      return count === 0 ? 'Nothing was running.' : `Ending ${count} ${count === 1 ? 'process' : 'processes'}…`;
    },
    cleanup: async () => {
      const { count } = await tools.cleanupProcesses(scope, ownerId);
      // The service removed every ended one with its logs; there is no event for that.
      client.setQueryData<ProcessRow[]>(key, (list) => list?.filter((p) => p.status === 'running'));
      return count === 0 ? 'Nothing to clean up.' : `Removed ${count} ended ${count === 1 ? 'process' : 'processes'}.`;
    },
  };
}
