import { useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router-dom';
import type { ProcessRow, ProcessScope } from '../api/tools';
import { ProcessLog } from '../components/ProcessLog';
import { ProcessScopePicker, type ScopeChoice } from '../components/ProcessScopePicker';
import { ProcessTable } from '../components/ProcessTable';
import { Card, Empty, ErrorNote, Loading } from '../components/ui';
import { useProcessActions, useProcesses } from '../query/processes';
import '../tools.css';

/**
 * Commands and background processes of a project's folder (`?project=`) or of a session's
 * workspace (`?session=`, with `project=` when known): start, kill, clean up, read logs.
 */
export function ProcessesPage() {
  const [params, setParams] = useSearchParams();
  const choice: ScopeChoice = { projectId: params.get('project'), sessionId: params.get('session') };
  const choose = (next: ScopeChoice) => {
    const query: Record<string, string> = {};
    if (next.projectId) query.project = next.projectId;
    if (next.sessionId) query.session = next.sessionId;
    setParams(query);
  };
  const scope: ProcessScope | null = choice.sessionId ? 'sessions' : choice.projectId ? 'projects' : null;
  const ownerId = choice.sessionId ?? choice.projectId;

  return (
    <div className="page" data-testid="processes-page">
      <div className="page-head">
        <div>
          <h1>Processes</h1>
          <p className="description">
            Background processes (dev servers, watchers, builds) and commands run in a project's folder or a session's
            workspace. Permission rules apply to what is started here.
          </p>
        </div>
      </div>
      <ProcessScopePicker value={choice} onChange={choose} />
      {scope && ownerId ? (
        <ProcessPanel key={`${scope}/${ownerId}`} scope={scope} ownerId={ownerId} />
      ) : (
        <Card>
          <Empty title="Choose a project.">Then its folder, or one of its sessions, to see what runs there.</Empty>
        </Card>
      )}
    </div>
  );
}

function ProcessPanel({ scope, ownerId }: { scope: ProcessScope; ownerId: string }) {
  const processes = useProcesses(scope, ownerId);
  const actions = useProcessActions(scope, ownerId);
  const [selected, setSelected] = useState<string | null>(null);
  const [notice, setNotice] = useState<string>();
  const [error, setError] = useState<string>();
  const [ending, setEnding] = useState<Set<string>>(new Set());
  const rows = processes.data ?? [];
  const selectedRow = rows.find((r) => r.id === selected);
  const running = rows.filter((r) => r.status === 'running').length;

  const act = async (what: () => Promise<string>) => {
    try {
      setNotice(await what());
      setError(undefined);
    } catch (e) {
      setNotice(undefined);
      setError((e as Error).message);
    }
  };
  const kill = (row: ProcessRow) =>
    act(async () => {
      setEnding((s) => new Set(s).add(row.id));
      try {
        return await actions.kill(row);
      } catch (e) {
        setEnding((s) => new Set([...s].filter((id) => id !== row.id)));
        throw e;
      }
    });

  return (
    <>
      <Card title="Start a background process" className="tools-card">
        <StartForm
          onStart={async (command, cwd) => {
            const row = await actions.start(command, cwd);
            setSelected(row.id);
          }}
        />
      </Card>
      <Card
        className="tools-card"
        title={`${rows.length} ${rows.length === 1 ? 'process' : 'processes'}${running ? `, ${running} running` : ''}`}
        actions={
          <>
            <button className="button small danger-ghost" onClick={() => act(actions.killAll)} disabled={running === 0}>
              Kill all
            </button>
            <button className="button small ghost" onClick={() => act(actions.cleanup)}>
              Clean up ended
            </button>
          </>
        }
      >
        <div className="stack">
          {notice && <div className="ok-note">{notice}</div>}
          <ErrorNote error={error} />
          {processes.isPending && <Loading />}
          <ErrorNote error={processes.error?.message} what="list the processes" />
          {processes.isSuccess && rows.length === 0 && (
            <Empty title="Nothing has run here yet.">Start a background process above, e.g. npm run dev.</Empty>
          )}
          {rows.length > 0 && (
            <ProcessTable
              rows={rows}
              selected={selected}
              onSelect={(row) => setSelected(row.id)}
              onKill={kill}
              ending={new Set([...ending].filter((id) => rows.some((r) => r.id === id && r.status === 'running')))}
            />
          )}
        </div>
      </Card>
      {selectedRow && (
        <Card title="Log" className="tools-card">
          <ProcessLog key={selectedRow.id} scope={scope} ownerId={ownerId} row={selectedRow} onClose={() => setSelected(null)} />
        </Card>
      )}
    </>
  );
}

function StartForm({ onStart }: { onStart: (command: string, cwd: string) => Promise<void> }) {
  const [command, setCommand] = useState('');
  const [cwd, setCwd] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    try {
      await onStart(command, cwd);
      setCommand('');
      setError(undefined);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="stack" onSubmit={submit} aria-label="Start a process">
      <div className="inline-form">
        <input
          className="grow mono"
          value={command}
          onChange={(e) => setCommand(e.target.value)}
          placeholder="npm run dev"
          aria-label="Command"
          required
        />
        <input value={cwd} onChange={(e) => setCwd(e.target.value)} placeholder="folder (optional)" aria-label="Folder" />
        <button className="button primary small" disabled={busy || command.trim() === ''}>
          Start
        </button>
      </div>
      <ErrorNote error={error} what="start it" />
    </form>
  );
}
