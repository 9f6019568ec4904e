import { useState, type FormEvent } from 'react';
import { api, type CreateRule, type Rule } from '../api/client';
import { useLive } from '../store/live';
import { useLoad } from '../lib/useLoad';
import { DecisionBadge, Empty, ErrorNote, Loading } from './ui';

interface Props {
  /** A project's rules, or the global ones when absent. */
  projectId?: string;
  /** Show only deny rules (the dashboard's "global deny rules"). */
  denyOnly?: boolean;
}

/** Lists rules in evaluation order; create, edit and delete them in place. */
export function RulesEditor({ projectId, denyOnly }: Props) {
  const config = useLive((s) => s.config);
  const rules = useLoad(() => (projectId ? api.projectRules(projectId) : api.globalRules()), [projectId, config]);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  const changed = () => {
    setEditing(null);
    setError(undefined);
    useLive.getState().bumpConfig();
  };
  const create = async (body: CreateRule) => {
    try {
      await (projectId ? api.createProjectRule(projectId, body) : api.createGlobalRule(body));
      changed();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const remove = async (rule: Rule) => {
    try {
      await api.deleteRule(rule.id);
      changed();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const shown = (rules.data ?? []).filter((r) => !denyOnly || r.behavior === 'deny');
  return (
    <div className="rules" data-testid={projectId ? 'project-rules' : 'global-rules'}>
      {rules.loading && <Loading />}
      <ErrorNote error={rules.error} what="load the rules" />
      {!rules.loading && shown.length === 0 && !rules.error && (
        <Empty title={denyOnly ? 'No global deny rules.' : 'No rules yet.'}>
          Every tool call is allowed until a rule says otherwise. Add a deny rule like Bash <code>rm:*</code>.
        </Empty>
      )}
      {shown.length > 0 && (
        <table className="table compact">
          <thead>
            <tr>
              <th>Behavior</th>
              <th>Tool</th>
              <th>Matches</th>
              <th className="num">Priority</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {shown.map((r) =>
              editing === r.id ? (
                <tr key={r.id}>
                  <td colSpan={5}>
                    <RuleForm
                      initial={r}
                      submitLabel="Save"
                      onCancel={() => setEditing(null)}
                      onSubmit={async (body) => {
                        try {
                          await api.updateRule(r.id, body);
                          changed();
                        } catch (e) {
                          setError((e as Error).message);
                        }
                      }}
                    />
                  </td>
                </tr>
              ) : (
                <tr key={r.id}>
                  <td>
                    <DecisionBadge decision={r.behavior} />
                  </td>
                  <td className="mono">{r.tool_name}</td>
                  <td className="mono">{r.rule_content || <span className="muted">any input</span>}</td>
                  <td className="num">{r.priority}</td>
                  <td className="row-actions">
                    <button className="button small ghost" onClick={() => setEditing(r.id)}>
                      Edit
                    </button>
                    <button className="button small danger-ghost" onClick={() => remove(r)}>
                      Delete
                    </button>
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      )}
      <ErrorNote error={error} />
      <RuleForm submitLabel="Add rule" onSubmit={create} defaultBehavior="deny" />
    </div>
  );
}

function RuleForm(props: {
  initial?: Rule;
  submitLabel: string;
  defaultBehavior?: string;
  onSubmit: (body: CreateRule) => Promise<void>;
  onCancel?: () => void;
}) {
  const [tool, setTool] = useState(props.initial?.tool_name ?? 'Bash');
  const [content, setContent] = useState(props.initial?.rule_content ?? '');
  const [behavior, setBehavior] = useState(props.initial?.behavior ?? props.defaultBehavior ?? 'deny');
  const [priority, setPriority] = useState(String(props.initial?.priority ?? 0));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await props.onSubmit({ tool_name: tool, rule_content: content, behavior, priority: Number(priority) || 0 });
    if (!props.initial) setContent('');
  };
  return (
    <form className="rule-form" onSubmit={submit} aria-label={props.submitLabel}>
      <select value={behavior} onChange={(e) => setBehavior(e.target.value)} aria-label="Behavior">
        <option value="deny">deny</option>
        <option value="allow">allow</option>
      </select>
      <input value={tool} onChange={(e) => setTool(e.target.value)} aria-label="Tool" placeholder="Bash" required />
      <input
        value={content}
        onChange={(e) => setContent(e.target.value)}
        aria-label="Pattern"
        placeholder="e.g. rm:*  (empty: any)"
        className="grow"
      />
      <input value={priority} onChange={(e) => setPriority(e.target.value)} aria-label="Priority" type="number" className="narrow" />
      <button className="button primary small">{props.submitLabel}</button>
      {props.onCancel && (
        <button type="button" className="button ghost small" onClick={props.onCancel}>
          Cancel
        </button>
      )}
    </form>
  );
}
