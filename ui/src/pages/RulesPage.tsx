import { useState } from 'react';
import { RuleFields, GLOBAL } from '../components/RuleFields';
import { RulesTable } from '../components/RulesTable';
import { Card, Empty, ErrorNote, Loading } from '../components/ui';
import { useAllRules, useRuleActions } from '../query/rules';
import '../tools.css';

const ANY = 'any';

/** Every permission rule in one place: global and per project, allow and deny. */
export function RulesPage() {
  const all = useAllRules();
  const actions = useRuleActions();
  const [scope, setScope] = useState(ANY);
  const [decision, setDecision] = useState(ANY);
  const [tool, setTool] = useState('');

  const shown = all.rows.filter(
    ({ rule }) =>
      (scope === ANY || (scope === GLOBAL ? !rule.project_id : rule.project_id === scope)) &&
      (decision === ANY || rule.behavior === decision) &&
      (tool === '' || rule.tool_name.toLowerCase().includes(tool.toLowerCase())),
  );
  const filtered = shown.length !== all.rows.length;

  return (
    <div className="page" data-testid="rules-page">
      <div className="page-head">
        <div>
          <h1>Rules</h1>
          <p className="description">
            Every tool call is checked against its project's rules and the global ones: deny rules first, then allow
            rules, higher priority first. With no matching rule, the call is allowed.
          </p>
        </div>
      </div>

      <Card title="New rule" className="tools-card">
        <RuleFields
          projects={all.projects}
          defaultScope={scope !== ANY ? scope : GLOBAL}
          submitLabel="Add rule"
          onSubmit={(projectId, body) => actions.create(projectId, body)}
        />
      </Card>

      <Card
        className="tools-card"
        title={`${shown.length} ${shown.length === 1 ? 'rule' : 'rules'}${filtered ? ` of ${all.rows.length}` : ''}`}
        actions={
          <div className="filters" role="group" aria-label="Filters">
            <select value={scope} onChange={(e) => setScope(e.target.value)} aria-label="Filter by scope">
              <option value={ANY}>All scopes</option>
              <option value={GLOBAL}>Global</option>
              {all.projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
            <select value={decision} onChange={(e) => setDecision(e.target.value)} aria-label="Filter by behavior">
              <option value={ANY}>Allow and deny</option>
              <option value="allow">Allow</option>
              <option value="deny">Deny</option>
            </select>
            <input value={tool} onChange={(e) => setTool(e.target.value)} placeholder="Tool" aria-label="Filter by tool" />
          </div>
        }
      >
        {all.loading && all.rows.length === 0 && <Loading />}
        <ErrorNote error={all.error} what="load the rules" />
        {!all.loading && shown.length === 0 && !all.error && (
          <Empty title={filtered ? 'No rule matches these filters.' : 'No rules yet.'}>
            {!filtered && 'Every tool call is allowed until a rule says otherwise. Add a deny rule like Bash rm:*.'}
          </Empty>
        )}
        {shown.length > 0 && <RulesTable rows={shown} />}
      </Card>
    </div>
  );
}
