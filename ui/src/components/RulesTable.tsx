import { useState } from 'react';
import { Link } from 'react-router-dom';
import type { RuleRow } from '../query/rules';
import { useRuleActions } from '../query/rules';
import { RuleFields } from './RuleFields';
import { DecisionBadge, ErrorNote } from './ui';

/** Rules with their scope, each editable and deletable in place. */
export function RulesTable({ rows }: { rows: RuleRow[] }) {
  const actions = useRuleActions();
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  const remove = async (ruleId: string) => {
    try {
      await actions.remove(ruleId);
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <>
      <ErrorNote error={error} what="delete the rule" />
      <div className="scroll-box">
        <table className="table compact">
          <thead>
            <tr>
              <th>Scope</th>
              <th>Behavior</th>
              <th>Tool</th>
              <th>Matches</th>
              <th className="num">Priority</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rows.map(({ rule, projectName }) =>
              editing === rule.id ? (
                <tr key={rule.id}>
                  <td colSpan={6}>
                    <RuleFields
                      initial={rule}
                      submitLabel="Save"
                      onCancel={() => setEditing(null)}
                      onSubmit={async (_scope, body) => {
                        await actions.update(rule.id, body);
                        setEditing(null);
                      }}
                    />
                  </td>
                </tr>
              ) : (
                <tr key={rule.id} data-testid="rule-row">
                  <td>
                    {rule.project_id ? (
                      <Link to={`/projects/${rule.project_id}`}>{projectName}</Link>
                    ) : (
                      <span className="tag scope-global">global</span>
                    )}
                  </td>
                  <td>
                    <DecisionBadge decision={rule.behavior} />
                  </td>
                  <td className="mono">{rule.tool_name}</td>
                  <td className="mono wrap-anywhere">{rule.rule_content || <span className="muted">any input</span>}</td>
                  <td className="num">{rule.priority}</td>
                  <td className="row-actions">
                    <button className="button small ghost" onClick={() => setEditing(rule.id)}>
                      Edit
                    </button>
                    <button className="button small danger-ghost" onClick={() => remove(rule.id)}>
                      Delete
                    </button>
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      </div>
    </>
  );
}
