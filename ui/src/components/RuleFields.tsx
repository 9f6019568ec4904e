import { useState, type FormEvent } from 'react';
import type { CreateRule, Project, Rule } from '../api/client';
import { ErrorNote } from './ui';

/** The scope select's value for a global rule (project ids are UUIDs, so no clash). */
export const GLOBAL = 'global';

interface Props {
  /** The rule being edited; absent for a new one. */
  initial?: Rule;
  /** For a new rule: where it may go (the scope select lists "Global" and these). */
  projects?: Project[];
  /** The scope a new rule starts in (`GLOBAL` or a project id). */
  defaultScope?: string;
  submitLabel: string;
  /** Resolves once the API accepted it; a rejection's message is shown under the form. */
  onSubmit: (projectId: string | null, body: CreateRule) => Promise<unknown>;
  onCancel?: () => void;
}

/** One rule's fields: create (with a scope) or edit (the scope of a rule cannot change). */
export function RuleFields(props: Props) {
  const [scope, setScope] = useState(props.defaultScope ?? GLOBAL);
  const [behavior, setBehavior] = useState<string>(props.initial?.behavior ?? 'deny');
  const [tool, setTool] = useState(props.initial?.tool_name ?? 'Bash');
  const [content, setContent] = useState(props.initial?.rule_content ?? '');
  const [priority, setPriority] = useState(String(props.initial?.priority ?? 0));
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    try {
      const body: CreateRule = { tool_name: tool, rule_content: content, behavior, priority: Number(priority) || 0 };
      await props.onSubmit(scope === GLOBAL ? null : scope, body);
      setError(undefined);
      if (!props.initial) setContent('');
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="rule-fields" onSubmit={submit} aria-label={props.submitLabel}>
      <div className="rule-fields-row">
        {props.projects && (
          <select value={scope} onChange={(e) => setScope(e.target.value)} aria-label="Scope">
            <option value={GLOBAL}>Global (every project)</option>
            {props.projects.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        )}
        <select value={behavior} onChange={(e) => setBehavior(e.target.value)} aria-label="Behavior">
          <option value="deny">deny</option>
          <option value="allow">allow</option>
        </select>
        <input value={tool} onChange={(e) => setTool(e.target.value)} aria-label="Tool" placeholder="Bash, Read or *" required />
        <input
          value={content}
          onChange={(e) => setContent(e.target.value)}
          aria-label="Pattern"
          placeholder="rm:*  or a glob (empty: any input)"
          className="grow"
        />
        <input value={priority} onChange={(e) => setPriority(e.target.value)} aria-label="Priority" type="number" className="narrow" />
        <button className="button primary small" disabled={busy}>
          {props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" className="button ghost small" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
      <ErrorNote error={error} />
    </form>
  );
}
