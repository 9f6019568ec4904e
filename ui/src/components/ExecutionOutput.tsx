// One run of a scheduled agent: what it says while it runs (its own stream), and how it ended.
import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { agentsApi, isRunning, type Execution } from '../api/agents';
import { messageOf } from '../lib/errors';
import type { OutputEntry } from '../lib/executionOutput';
import { usd, count } from '../lib/format';
import { useRunStream } from '../lib/useRunStream';
import { keys, queryClient } from '../query/client';
import { putExecution } from '../query/agentFrames';
import { ErrorNote, Loading } from './ui';
import { ExecutionStatusBadge, LimitWait, runTook } from './ExecutionsTable';

/**
 * `follow`: the run was started here a moment ago. Its stream is then followed from its first
 * event even when its detail already says it ended (a quick run can end before the detail is
 * read, and its topic still holds its events); otherwise only a run seen queued or running is.
 */
export function ExecutionOutput({ executionId, follow, onClose }: { executionId: string; follow?: boolean; onClose?: () => void }) {
  const query = useQuery<Execution>({ queryKey: keys.execution(executionId), queryFn: () => agentsApi.execution(executionId) });
  const exec = query.data;
  const running = exec ? isRunning(exec.status) : false;
  // Once followed, a run's stream stays shown after it ends (its lines are not in the answer
  // of GET /api/executions/{id}, which keeps only the final text and the raw lines).
  const followed = useRef(false);
  if (running || follow) followed.current = true;
  const stream = useRunStream(executionId, followed.current);
  const [cancelling, setCancelling] = useState(false);
  const [error, setError] = useState<string>();
  const box = useRef<HTMLElement>(null);
  // The stream said the run ended but the detail still says it runs: the detail's answer was
  // read before the end and arrived after the end's frame (which had nothing to update yet).
  // Read it once more (once: the service stores the end before it tells it).
  const { refetch } = query;
  const reread = useRef(false);
  const stale = stream.finished && running && !query.isFetching;
  useEffect(() => {
    if (!stale || reread.current) return;
    reread.current = true;
    void refetch();
  }, [stale, refetch]);
  // Opened from the history below it: bring it into view (on a phone it is screens away).
  useEffect(() => box.current?.scrollIntoView?.({ block: 'start', behavior: 'smooth' }), []);

  const cancel = async () => {
    setCancelling(true);
    setError(undefined);
    try {
      putExecution(queryClient, await agentsApi.cancel(executionId));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setCancelling(false);
    }
  };

  return (
    <section ref={box} className="card run-output" data-testid="execution-output" data-status={exec?.status}>
      <header className="card-head">
        <h2>
          Run <code>{executionId.slice(0, 8)}</code> {exec && <ExecutionStatusBadge status={exec.status} />}
        </h2>
        <div className="card-actions">
          {running && (
            <button className="button small danger-ghost" data-testid="execution-cancel" disabled={cancelling} onClick={cancel}>
              {cancelling ? 'Cancelling…' : 'Cancel run'}
            </button>
          )}
          {onClose && (
            <button className="button small ghost" onClick={onClose}>
              Close
            </button>
          )}
        </div>
      </header>
      <div className="card-body run-output-body">
        <ErrorNote error={error} what="cancel the run" />
        <ErrorNote error={query.error ? messageOf(query.error) : undefined} what="load the run" />
        {query.isPending && <Loading />}
        {exec && <RunFacts exec={exec} />}
        {followed.current && (
          <>
            {stream.error && <p className="muted small">The run's stream: {stream.error} Retrying…</p>}
            <ol className="run-lines" data-testid="execution-lines" aria-live="polite">
              {stream.entries.map((e) => (
                <RunLine key={e.key} entry={e} />
              ))}
              {running && stream.entries.length === 0 && <li className="muted">{waitingFor(exec?.status)}</li>}
            </ol>
          </>
        )}
        {exec && !running && (
          <RunResult exec={exec} streamedRaw={stream.missed ? [] : stream.raw} streamedAnswer={lastAnswer(stream.entries)} />
        )}
      </div>
    </section>
  );
}

function RunFacts({ exec }: { exec: Execution }) {
  return (
    <dl className="facts">
      <div><dt>Trigger</dt><dd>{exec.trigger}</dd></div>
      <div><dt>Queued</dt><dd>{new Date(exec.created_at).toLocaleString()}</dd></div>
      <div><dt>Took</dt><dd>{runTook(exec)}</dd></div>
      <div><dt>Cost</dt><dd>{exec.cost_usd == null ? '—' : usd(exec.cost_usd)}</dd></div>
      <div><dt>Tokens</dt><dd>{exec.input_tokens == null ? '—' : `${count(exec.input_tokens)} in · ${count(exec.output_tokens)} out`}</dd></div>
      {exec.exit_code != null && <div><dt>Exit code</dt><dd>{exec.exit_code}</dd></div>}
      {exec.status === 'waiting_for_limit' && (
        <div><dt>Usage limit</dt><dd><LimitWait resumesAt={exec.resumes_at} /></dd></div>
      )}
    </dl>
  );
}

function waitingFor(status: Execution['status'] | undefined): string {
  if (status === 'queued') return 'Waiting for its folder…';
  if (status === 'waiting_for_limit') return 'Waiting for a usage limit to reset…';
  return 'Waiting for output…';
}

function RunLine({ entry }: { entry: OutputEntry }) {
  switch (entry.kind) {
    case 'text':
      return <li className="run-text">{entry.text}</li>;
    case 'tool':
      return (
        <li className="run-tool">
          <details>
            <summary>
              <strong>{entry.tool}</strong> <code className="subject">{entry.input.split('\n')[0].slice(0, 120)}</code>
              {entry.isError && <span className="tool-error"> failed</span>}
            </summary>
            {entry.input && <pre>{entry.input}</pre>}
            {entry.output !== undefined && <pre className={entry.isError ? 'tool-error' : ''}>{entry.output || '(no output)'}</pre>}
          </details>
        </li>
      );
    case 'result':
      return (
        <li className={`result ${entry.ok ? '' : 'result-error'}`}>
          Turn {entry.status || 'finished'}
          {entry.cost != null ? ` · ${usd(entry.cost)}` : ''}
        </li>
      );
    case 'note':
      return <li className={entry.bad ? 'run-note run-note-bad' : 'run-note'}>{entry.text}</li>;
  }
}

/** How the run ended: its error, its final answer, and every raw line the CLI wrote. */
function RunResult(props: { exec: Execution; streamedRaw: string[]; streamedAnswer: string }) {
  const { exec, streamedRaw } = props;
  const answer = exec.output || props.streamedAnswer;
  // The detail loaded while the run went on holds only the lines written until then (the
  // finished event leaves them out): a run followed from its start has them all from its stream.
  const raw = streamedRaw.length > 0 ? streamedRaw.join('\n') : exec.raw_output;
  return (
    <div className="run-result" data-testid="execution-result">
      {exec.error && <div className="error-note">{exec.error}</div>}
      <h3>Output</h3>
      {answer ? <div className="run-answer">{answer}</div> : <p className="muted">The run left no answer.</p>}
      {raw && (
        <details className="run-raw">
          <summary>Raw lines ({raw.split('\n').filter(Boolean).length})</summary>
          <pre>{raw}</pre>
        </details>
      )}
    </div>
  );
}

/** The turn's final text as the stream told it (when the run's row does not carry it). */
function lastAnswer(entries: OutputEntry[]): string {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e.kind === 'result' && e.text) return e.text;
  }
  return '';
}
