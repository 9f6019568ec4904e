// What a live session's processes use: memory (and its peak), CPU time, processes, and the
// tools the kernel's OOM killer ended. The page's own read of the session brings the first
// reading; it is read again every few seconds while the page is open (the service itself reads
// the session's cgroup at most once a second). Hidden when the session is not live or the
// machine gives no readings.
import { useQuery } from '@tanstack/react-query';
import { api, type Schemas } from '../api/client';
import { keys } from '../query/client';
import { bytes, count, duration } from '../lib/format';

export const RESOURCES_POLL_MS = 3000;

export type Resources = Schemas['Resources'];

export function SessionResources(props: { sessionId: string; live: boolean; initial?: Resources | null }) {
  const { sessionId, live, initial } = props;
  const readings = useQuery({
    queryKey: keys.sessionResources(sessionId),
    queryFn: async () => (await api.session(sessionId)).resources ?? null,
    enabled: live,
    // The page's read of the session is the first reading: no second read at once.
    initialData: initial === undefined ? undefined : initial,
    initialDataUpdatedAt: initial === undefined ? undefined : Date.now(),
    staleTime: RESOURCES_POLL_MS,
    refetchInterval: live ? RESOURCES_POLL_MS : false,
  });
  const r = readings.data;
  if (!live || !r) return null;
  const oom = r.oom_kills ?? 0;
  return (
    <div className="session-resources muted small" data-testid="session-resources">
      <span title="Memory the session's processes use now, and the most they used at once">
        Memory {bytes(r.memory_bytes)}
        {r.memory_peak_bytes != null && ` (peak ${bytes(r.memory_peak_bytes)})`}
      </span>
      {' · '}
      <span title="CPU time used, user and system">CPU {cpu(r.cpu_usec)}</span>
      {' · '}
      <span title="Processes and threads alive">{r.pids == null ? '—' : count(r.pids)} processes</span>
      {oom > 0 && (
        <>
          {' · '}
          <span className="resources-oom" title="Processes the kernel ended for going over the session's memory limit">
            {oom} killed for memory
          </span>
        </>
      )}
    </div>
  );
}

function cpu(usec: number | null | undefined): string {
  if (usec == null) return '—';
  const seconds = usec / 1_000_000;
  return seconds < 60 ? `${seconds.toFixed(1)}s` : duration(Math.round(seconds));
}
