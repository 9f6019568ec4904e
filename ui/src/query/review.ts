// A worktree session's diff, and committing and merging it. The diff has no events (files
// change on disk, not through the stream), so it is read when the review page opens and again
// on request or after a commit or merge here.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError } from '../api/client';
import { tools, type MergeStrategy } from '../api/tools';
import { keys } from './client';

/** Files per page of the diff. */
export const DIFF_FILES_PAGE = 100;

export function useSession(sessionId: string) {
  return useQuery({ queryKey: keys.session(sessionId), queryFn: () => api.session(sessionId) });
}

export function useDiff(sessionId: string, offset: number, enabled: boolean) {
  return useQuery({
    queryKey: keys.diffPage(sessionId, offset),
    queryFn: () => tools.diff(sessionId, offset, DIFF_FILES_PAGE),
    enabled,
    // No event says the files changed: opening the page reads them again.
    staleTime: 0,
  });
}

/** What an action's failure says: the API's message, and for a merge conflict the files. */
export interface Failure {
  message: string;
  files: string[];
}

export function failureOf(e: unknown): Failure {
  const body = e instanceof ApiError ? (e.body as { files?: unknown } | undefined) : undefined;
  const files = Array.isArray(body?.files) ? body.files.filter((f): f is string => typeof f === 'string') : [];
  return { message: (e as Error).message, files };
}

export function useReviewActions(sessionId: string) {
  const client = useQueryClient();
  const changed = () => client.invalidateQueries({ queryKey: keys.diff(sessionId) });
  return {
    commit: async (message: string) => {
      const done = await tools.commit(sessionId, message);
      void changed();
      return done;
    },
    merge: async (strategy: MergeStrategy) => {
      const done = await tools.merge(sessionId, strategy);
      void changed();
      return done;
    },
    refresh: changed,
  };
}
