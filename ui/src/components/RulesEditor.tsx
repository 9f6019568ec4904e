import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, type CreateRule, type Rule } from '../api/client';
import { changed } from '../query/localChanges';
import { rulesQuery } from '../query/queries';
import { DecisionBadge, Empty, ErrorNote, Loading } from './ui';

interface Props {
  /** A project's rules, or the global ones when absent. */
  projectId?: string;
  /** Show only deny rules. */
  denyOnly?: boolean;
}

/** Lists rules in evaluation order (every one: allow and deny); create, edit and delete them in place. */
export function RulesEditor({ projectId, denyOnly }: Props) {
  const rules = useQuery(rulesQuery(projectId));
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  const done = () => {
    setEditing(null);
    setError(undefined);
  };
  const create = async (body: CreateRule) => {
    try {
      const row = await (projectId ? api.createProjectRule(projectId, body) : api.createGlobalRule(body));
      changed.rule(row, true);
      done();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const remove = async (rule: Rule) => {
    try {
      await api.deleteRule(rule.id);
      changed.ruleDeleted(rule.id);
      done();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const shown = (rules.data ?? []).filter((r) => !denyOnly || r.behavior === 'deny');
  return (
    <div className="rules" data-testid={projectId ? 'project-rules' : 'global-rules'}>
      {rules.isPending && <Loading />}
      <ErrorNote error={rules.error?.message} what="load the rules" />
      {!rules.isPending && shown.length === 0 && !rules.error && (
        <Empty title={denyOnly ? 'No deny rules.' : 'No rules yet.'}>
          Every tool call is allowed until a rule says otherwise. Add a deny rule like Bash <code>rm:*</code>.
        </Empty>
      )}
      {shown.length > 0 && (
        <div className="table-scroll">
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
                            changed.rule(await api.updateRule(r.id, body));
                            done();
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
                    <td className="mono">
                      {r.rule_content || <span className="muted">any input</span>}
                      {r.updated_input && (
                        <span className="tag" title={JSON.stringify(r.updated_input)}>
                          rewrites input
                        </span>
                      )}
                    </td>
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
        </div>
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
